//! The protobuf wire format, as far as the rewrite reads and writes it:
//! a message is a run of fields, each kept with its whole encoding so an
//! unchanged field is copied byte for byte.

use super::RewriteError;

/// One field of an encoded message: its number, value and whole encoding.
#[derive(Debug, Clone, Copy)]
pub(super) struct Field<'a> {
    pub number: u32,
    pub value: Value<'a>,
    /// The whole field as encoded (key included).
    pub raw: &'a [u8],
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Value<'a> {
    Varint(u64),
    Fixed,
    Bytes(&'a [u8]),
}

impl<'a> Field<'a> {
    pub fn bytes(&self) -> Result<&'a [u8], RewriteError> {
        match self.value {
            Value::Bytes(b) => Ok(b),
            _ => Err(RewriteError::Malformed("a length-delimited field is not")),
        }
    }

    pub fn string(&self) -> Result<String, RewriteError> {
        String::from_utf8(self.bytes()?.to_vec())
            .map_err(|_| RewriteError::Malformed("a name is not UTF-8"))
    }

    pub fn varint(&self) -> Result<u64, RewriteError> {
        match self.value {
            Value::Varint(v) => Ok(v),
            _ => Err(RewriteError::Malformed("an integer field is not a varint")),
        }
    }
}

/// The fields of one encoded message, in order.
pub(super) fn parse(buf: &[u8]) -> Result<Vec<Field<'_>>, RewriteError> {
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < buf.len() {
        let start = pos;
        let key = varint(buf, &mut pos)?;
        let number = u32::try_from(key >> 3)
            .ok()
            .filter(|n| *n > 0)
            .ok_or(RewriteError::Malformed("field number"))?;
        let value = match key & 7 {
            0 => Value::Varint(varint(buf, &mut pos)?),
            1 => {
                pos = skip(buf, pos, 8)?;
                Value::Fixed
            }
            2 => {
                let len = usize::try_from(varint(buf, &mut pos)?)
                    .map_err(|_| RewriteError::Malformed("length"))?;
                let end = skip(buf, pos, len)?;
                let bytes = &buf[pos..end];
                pos = end;
                Value::Bytes(bytes)
            }
            5 => {
                pos = skip(buf, pos, 4)?;
                Value::Fixed
            }
            _ => return Err(RewriteError::Malformed("wire type")),
        };
        out.push(Field {
            number,
            value,
            raw: &buf[start..pos],
        });
    }
    Ok(out)
}

fn skip(buf: &[u8], pos: usize, len: usize) -> Result<usize, RewriteError> {
    pos.checked_add(len)
        .filter(|end| *end <= buf.len())
        .ok_or(RewriteError::Malformed("a field runs past the end"))
}

pub(super) fn varint(buf: &[u8], pos: &mut usize) -> Result<u64, RewriteError> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let b = *buf
            .get(*pos)
            .ok_or(RewriteError::Malformed("a varint runs past the end"))?;
        *pos += 1;
        v |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Ok(v);
        }
    }
    Err(RewriteError::Malformed("a varint is too long"))
}

pub(super) fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

pub(super) fn put_varint_field(out: &mut Vec<u8>, number: u32, v: u64) {
    put_varint(out, u64::from(number) << 3);
    put_varint(out, v);
}

pub(super) fn put_bytes(out: &mut Vec<u8>, number: u32, bytes: &[u8]) {
    put_varint(out, (u64::from(number) << 3) | 2);
    put_varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}
