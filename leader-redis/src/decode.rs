//! Reading script replies: plain functions, shared by the blocking and async paths.

use std::time::{Duration, SystemTime};

use redis::Value;

use crate::error::OpError;

/// The elements of an array reply, or `None` for any other shape.
pub(crate) fn array(reply: &Value) -> Option<&[Value]> {
    match reply {
        Value::Array(items) | Value::Set(items) => Some(items),
        _ => None,
    }
}

/// An integer reply, or a bulk/simple string holding one.
pub(crate) fn int(value: &Value) -> Option<i64> {
    match value {
        Value::Int(n) => Some(*n),
        Value::BulkString(bytes) => decimal(bytes),
        Value::SimpleString(text) => decimal(text.as_bytes()),
        _ => None,
    }
}

/// The integer `text` writes in decimal: an optional sign, then digits, in `i64`'s range
/// (what `i64`'s `FromStr` accepts), read from the bytes as they came, without a UTF-8
/// check first: every reply of a cycle holds several (a fencing token, two timestamps).
fn decimal(text: &[u8]) -> Option<i64> {
    let (negative, digits) = match text {
        [b'-', rest @ ..] => (true, rest),
        [b'+', rest @ ..] => (false, rest),
        _ => (false, text),
    };
    if digits.is_empty() {
        return None;
    }
    digits.iter().try_fold(0i64, |n, &byte| {
        if !byte.is_ascii_digit() {
            return None;
        }
        let digit = i64::from(byte - b'0');
        let n = n.checked_mul(10)?;
        if negative {
            n.checked_sub(digit)
        } else {
            n.checked_add(digit)
        }
    })
}

/// `true` for a nil reply (a missing field).
pub(crate) fn is_nil(value: &Value) -> bool {
    matches!(value, Value::Nil)
}

/// A non-negative integer field of the lock record.
pub(crate) fn u64_field(value: Option<&Value>, field: &'static str) -> Result<u64, OpError> {
    value
        .and_then(int)
        .and_then(|n| u64::try_from(n).ok())
        .ok_or(OpError::Corrupt { field })
}

/// A UTF-8 text field of the lock record.
pub(crate) fn text_field(value: Option<&Value>, field: &'static str) -> Result<String, OpError> {
    let text = match value {
        Some(Value::BulkString(bytes)) => std::str::from_utf8(bytes).ok().map(str::to_owned),
        Some(Value::SimpleString(text)) => Some(text.clone()),
        _ => None,
    };
    text.ok_or(OpError::Corrupt { field })
}

/// A timestamp field: microseconds since the Unix epoch.
pub(crate) fn time_field(
    value: Option<&Value>,
    field: &'static str,
) -> Result<SystemTime, OpError> {
    let micros = u64_field(value, field)?;
    SystemTime::UNIX_EPOCH
        .checked_add(Duration::from_micros(micros))
        .ok_or(OpError::Corrupt { field })
}

/// This node's clock in microseconds since the Unix epoch (0 before the epoch).
pub(crate) fn micros_since_epoch(time: SystemTime) -> u64 {
    time.duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

/// A duration in whole milliseconds for `PX`, at least 1.
pub(crate) fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis())
        .unwrap_or(u64::MAX)
        .max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_accept_integers_and_digit_strings_only() {
        let digits = Value::BulkString(b"1786000000123456".to_vec());
        assert_eq!(
            u64_field(Some(&digits), "fence").unwrap(),
            1_786_000_000_123_456
        );
        assert_eq!(u64_field(Some(&Value::Int(7)), "fence").unwrap(), 7);
        for bad in [
            Value::Int(-1),
            Value::Nil,
            Value::BulkString(b"1.7e+15".to_vec()),
            Value::BulkString(vec![0xff]),
        ] {
            assert!(matches!(
                u64_field(Some(&bad), "fence"),
                Err(OpError::Corrupt { field: "fence" })
            ));
        }
        assert!(u64_field(None, "fence").is_err());
        let t = time_field(Some(&Value::Int(1_500_000)), "acq").unwrap();
        assert_eq!(t, SystemTime::UNIX_EPOCH + Duration::from_millis(1500));
        assert!(text_field(Some(&Value::Int(1)), "leader").is_err());
    }

    #[test]
    fn integers_in_text_read_as_i64_reads_them() {
        for text in [
            "0",
            "-0",
            "+7",
            "42",
            "007",
            "1786000000123456",
            "9223372036854775807",
            "-9223372036854775808",
            "9223372036854775808",
            "-9223372036854775809",
            "99999999999999999999",
            "",
            "+",
            "-",
            "--1",
            "+-1",
            "1.5",
            "1e3",
            " 1",
            "1 ",
            "12a",
            "\u{663}",
            "0x10",
        ] {
            let expected = text.parse::<i64>().ok();
            assert_eq!(int(&Value::BulkString(text.into())), expected, "{text:?}");
            assert_eq!(int(&Value::SimpleString(text.into())), expected, "{text:?}");
        }
        assert_eq!(int(&Value::BulkString(vec![b'1', 0xff])), None);
    }

    #[test]
    fn millis_rounds_down_but_never_to_zero() {
        assert_eq!(millis(Duration::from_micros(10)), 1);
        assert_eq!(millis(Duration::from_millis(1500)), 1500);
        assert_eq!(micros_since_epoch(SystemTime::UNIX_EPOCH), 0);
    }
}
