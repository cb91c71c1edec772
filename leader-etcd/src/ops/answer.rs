//! [`Answer`]: a transaction's answer read from etcd's message, with every nested
//! transaction's answer inside, and nothing taken on trust: an operation's answer that is
//! missing or of another kind than its request is an error, never a panic.

use etcd_client::TxnResponse;
use etcd_client::proto::{PbKeyValue, PbTxnOpResponse, PbTxnResponse};

use crate::error::OpError;

/// A transaction's answer: which branch ran, and each of its operations' answers.
#[derive(Debug)]
pub(crate) struct Answer {
    /// Whether the compares held (the `then` branch ran).
    pub(crate) succeeded: bool,
    /// The store's revision after the transaction (0 when the answer did not say).
    pub(crate) revision: i64,
    ops: Vec<OpAnswer>,
}

/// One operation's answer.
#[derive(Debug)]
enum OpAnswer {
    /// A range: the keys read.
    Range(Vec<PbKeyValue>),
    /// A put: the key's value before it, when asked for.
    Put(Option<PbKeyValue>),
    /// A delete: the keys deleted, when asked for.
    Delete(Vec<PbKeyValue>),
    /// A nested transaction.
    Txn(Answer),
    /// An answer without its body.
    Missing,
}

impl Answer {
    /// Reads the client's answer.
    pub(crate) fn read(response: TxnResponse) -> Self {
        Answer::from_pb(response.0)
    }

    fn from_pb(response: PbTxnResponse) -> Self {
        Answer {
            succeeded: response.succeeded,
            revision: response.header.map_or(0, |header| header.revision),
            ops: response
                .responses
                .into_iter()
                .map(|op| match op.response {
                    Some(PbTxnOpResponse::ResponseRange(range)) => OpAnswer::Range(range.kvs),
                    Some(PbTxnOpResponse::ResponsePut(put)) => OpAnswer::Put(put.prev_kv),
                    Some(PbTxnOpResponse::ResponseDeleteRange(delete)) => {
                        OpAnswer::Delete(delete.prev_kvs)
                    }
                    Some(PbTxnOpResponse::ResponseTxn(txn)) => OpAnswer::Txn(Answer::from_pb(txn)),
                    None => OpAnswer::Missing,
                })
                .collect(),
        }
    }

    /// The answer of the nested transaction at `index`.
    pub(crate) fn txn(self, index: usize) -> Result<Answer, OpError> {
        match self.ops.into_iter().nth(index) {
            Some(OpAnswer::Txn(answer)) => Ok(answer),
            _ => Err(OpError::Protocol(
                "a nested transaction's answer is missing",
            )),
        }
    }

    /// The key read by the range at `index`, if it exists.
    pub(crate) fn got(&mut self, index: usize) -> Result<Option<PbKeyValue>, OpError> {
        match self.ops.get_mut(index) {
            Some(OpAnswer::Range(kvs)) => Ok(kvs.pop()),
            _ => Err(OpError::Protocol("a read's answer is missing")),
        }
    }

    /// The value before the put at `index`, when it asked for it and there was one.
    pub(crate) fn put_before(&mut self, index: usize) -> Result<Option<PbKeyValue>, OpError> {
        match self.ops.get_mut(index) {
            Some(OpAnswer::Put(prev)) => Ok(prev.take()),
            _ => Err(OpError::Protocol("a write's answer is missing")),
        }
    }

    /// The keys read by the range at `index`.
    pub(crate) fn range(&mut self, index: usize) -> Result<Vec<PbKeyValue>, OpError> {
        match self.ops.get_mut(index) {
            Some(OpAnswer::Range(kvs)) => Ok(std::mem::take(kvs)),
            _ => Err(OpError::Protocol("a read's answer is missing")),
        }
    }

    /// The key deleted by the delete at `index`, when it asked for it and there was one.
    pub(crate) fn deleted(&mut self, index: usize) -> Result<Option<PbKeyValue>, OpError> {
        match self.ops.get_mut(index) {
            Some(OpAnswer::Delete(kvs)) => Ok(kvs.pop()),
            _ => Err(OpError::Protocol("a delete's answer is missing")),
        }
    }
}

#[cfg(test)]
mod tests {
    use etcd_client::proto::{PbRangeResponse, PbResponseOp};

    use super::*;

    #[test]
    fn a_missing_or_mismatched_answer_is_an_error() {
        let response = PbTxnResponse {
            header: None,
            succeeded: true,
            responses: vec![
                PbResponseOp { response: None },
                PbResponseOp {
                    response: Some(PbTxnOpResponse::ResponseRange(PbRangeResponse::default())),
                },
            ],
        };
        let mut answer = Answer::from_pb(response);
        assert!(answer.succeeded);
        assert!(matches!(answer.got(0), Err(OpError::Protocol(_))));
        assert!(matches!(answer.got(1), Ok(None)));
        assert!(matches!(answer.put_before(1), Err(OpError::Protocol(_))));
        assert!(matches!(answer.got(7), Err(OpError::Protocol(_))));
        assert!(matches!(answer.txn(0), Err(OpError::Protocol(_))));
    }
}
