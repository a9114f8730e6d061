//! Typed reads from a parsed TOML document that keep every value's place:
//! each error names the file, line, column and dotted key.

use std::ops::Range;

use toml::de::{DeTable, DeValue};
use toml::Spanned;

use super::ControlError;
use crate::expr::Value;

pub(crate) type Span = Range<usize>;

/// A value read from the file with where it was.
#[derive(Debug, Clone)]
pub(crate) struct At<T> {
    pub v: T,
    pub span: Span,
}

/// The file being read: its name (for messages) and text (for positions).
pub(crate) struct Src<'a> {
    pub file: &'a str,
    pub text: &'a str,
}

impl Src<'_> {
    /// 1-based line and column (in characters) of byte `off`.
    pub fn line_col(&self, off: usize) -> (usize, usize) {
        let off = off.min(self.text.len());
        let mut off = off;
        while !self.text.is_char_boundary(off) {
            off -= 1;
        }
        let before = &self.text[..off];
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        let line = before.matches('\n').count() + 1;
        (line, before[line_start..].chars().count() + 1)
    }

    pub fn err(&self, off: usize, key: &str, message: impl std::fmt::Display) -> ControlError {
        let (line, col) = self.line_col(off);
        ControlError::Invalid {
            file: self.file.to_string(),
            line,
            col,
            key: key.to_string(),
            message: message.to_string(),
        }
    }

    /// The byte offset in the file of byte `pos` of the string value at
    /// `span`, when the string is written without escapes (so offsets
    /// match); else the string's start.
    pub fn offset_in_string(&self, span: &Span, decoded: &str, pos: usize) -> usize {
        let raw = self.text.get(span.clone()).unwrap_or("");
        let inner = raw
            .strip_prefix('"')
            .and_then(|r| r.strip_suffix('"'))
            .or_else(|| raw.strip_prefix('\'').and_then(|r| r.strip_suffix('\'')));
        match inner {
            Some(i) if i == decoded && pos <= i.len() => span.start + 1 + pos,
            _ => span.start,
        }
    }
}

/// One TOML table being read, with its dotted path for messages.
pub(crate) struct Tbl<'a, 'i> {
    pub src: &'a Src<'a>,
    pub path: String,
    pub span: Span,
    pub t: &'a DeTable<'i>,
}

fn type_name(v: &DeValue<'_>) -> &'static str {
    match v {
        DeValue::String(_) => "a string",
        DeValue::Integer(_) => "an integer",
        DeValue::Float(_) => "a float",
        DeValue::Boolean(_) => "true/false",
        DeValue::Datetime(_) => "a date",
        DeValue::Array(_) => "an array",
        DeValue::Table(_) => "a table",
    }
}

/// A TOML scalar as a parameter [`Value`]; arrays, tables and dates are
/// refused.
pub(crate) fn scalar(v: &DeValue<'_>) -> Result<Value, ScalarError> {
    match v {
        DeValue::String(s) => Ok(Value::Str(s.to_string())),
        DeValue::Integer(i) => i64::from_str_radix(i.as_str(), i.radix())
            .map(Value::Int)
            .map_err(|_| ScalarError::TooBig { int: i.to_string() }),
        DeValue::Float(f) => match f.as_str().parse::<f64>() {
            Ok(x) if x.is_finite() => Ok(Value::Float(x)),
            _ => Err(ScalarError::NotFinite {
                float: f.to_string(),
            }),
        },
        DeValue::Boolean(b) => Ok(Value::Bool(*b)),
        other => Err(ScalarError::NotScalar {
            found: type_name(other),
        }),
    }
}

/// A TOML value that is not a parameter [`Value`].
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub(crate) enum ScalarError {
    #[error("integer {int} does not fit in 64 bits")]
    TooBig { int: String },
    #[error("{float} is not a finite number")]
    NotFinite { float: String },
    #[error("expected a number, string or true/false, found {found}")]
    NotScalar { found: &'static str },
}

impl<'a, 'i> Tbl<'a, 'i> {
    pub fn root(src: &'a Src<'a>, t: &'a Spanned<DeTable<'i>>) -> Tbl<'a, 'i> {
        Tbl {
            src,
            path: String::new(),
            span: t.span(),
            t: t.get_ref(),
        }
    }

    /// The dotted path of `key` in this table.
    pub fn key(&self, key: &str) -> String {
        if self.path.is_empty() || key.is_empty() {
            format!("{}{key}", self.path)
        } else {
            format!("{}.{key}", self.path)
        }
    }

    pub fn err(&self, off: usize, key: &str, message: impl std::fmt::Display) -> ControlError {
        self.src.err(off, &self.key(key), message)
    }

    /// Entries in file order.
    pub fn entries(&self) -> impl Iterator<Item = (&'a str, Span, &'a Spanned<DeValue<'i>>)> {
        self.t
            .iter()
            .map(|(k, v)| (k.get_ref().as_ref(), k.span(), v))
    }

    /// Refuses any key not in `allowed`, naming the ones that are.
    pub fn only(&self, allowed: &[&str]) -> Result<(), ControlError> {
        for (k, span, _) in self.entries() {
            if !allowed.contains(&k) {
                return Err(self.err(
                    span.start,
                    k,
                    format!("unknown key; expected one of: {}", allowed.join(", ")),
                ));
            }
        }
        Ok(())
    }

    pub fn get(&self, key: &str) -> Option<&'a Spanned<DeValue<'i>>> {
        self.t
            .iter()
            .find(|(k, _)| k.get_ref().as_ref() == key)
            .map(|(_, v)| v)
    }

    pub fn missing(&self, key: &str, what: &str) -> ControlError {
        self.err(self.span.start, key, format!("missing: {what}"))
    }

    fn typed<T>(
        &self,
        key: &str,
        want: &str,
        f: impl FnOnce(&DeValue<'i>) -> Option<T>,
    ) -> Result<Option<At<T>>, ControlError> {
        let Some(v) = self.get(key) else {
            return Ok(None);
        };
        match f(v.get_ref()) {
            Some(x) => Ok(Some(At {
                v: x,
                span: v.span(),
            })),
            None => Err(self.wrong(key, v, want)),
        }
    }

    /// The error of a value `v` at `key` that is not `want`.
    fn wrong(&self, key: &str, v: &Spanned<DeValue<'_>>, want: &str) -> ControlError {
        self.err(
            v.span().start,
            key,
            format!("expected {want}, found {}", type_name(v.get_ref())),
        )
    }

    /// The elements of the array at `key` (none when absent); `want` names
    /// the array in the error when the value is something else.
    fn array(&self, key: &str, want: &str) -> Result<&'a [Spanned<DeValue<'i>>], ControlError> {
        match self.get(key) {
            None => Ok(&[]),
            Some(v) => match v.get_ref() {
                DeValue::Array(a) => Ok(a),
                _ => Err(self.wrong(key, v, want)),
            },
        }
    }

    /// The table `v` of `key` as the table at `path`, or an error naming
    /// `want`.
    fn table_at(
        &self,
        key: &str,
        path: String,
        v: &'a Spanned<DeValue<'i>>,
        want: &str,
    ) -> Result<Tbl<'a, 'i>, ControlError> {
        match v.get_ref() {
            DeValue::Table(t) => Ok(Tbl {
                src: self.src,
                path,
                span: v.span(),
                t,
            }),
            _ => Err(self.wrong(key, v, want)),
        }
    }

    pub fn str(&self, key: &str) -> Result<Option<At<String>>, ControlError> {
        self.typed(key, "a string", |v| v.as_str().map(str::to_string))
    }

    pub fn req_str(&self, key: &str, what: &str) -> Result<At<String>, ControlError> {
        self.str(key)?.ok_or_else(|| self.missing(key, what))
    }

    /// A non-empty string (names, paths, addresses).
    pub fn word(&self, key: &str) -> Result<Option<At<String>>, ControlError> {
        let s = self.str(key)?;
        if let Some(s) = &s {
            if s.v.trim().is_empty() {
                return Err(self.err(s.span.start, key, "must not be empty"));
            }
        }
        Ok(s)
    }

    pub fn bool(&self, key: &str) -> Result<Option<bool>, ControlError> {
        Ok(self
            .typed(key, "true or false", DeValue::as_bool)?
            .map(|a| a.v))
    }

    /// An integer within `lo..=hi`.
    pub fn int(&self, key: &str, lo: u64, hi: u64) -> Result<Option<At<u64>>, ControlError> {
        let Some(v) = self.get(key) else {
            return Ok(None);
        };
        let n = match v.get_ref() {
            DeValue::Integer(i) => u64::from_str_radix(i.as_str(), i.radix()).ok(),
            _ => return Err(self.wrong(key, v, "an integer")),
        };
        match n {
            Some(n) if (lo..=hi).contains(&n) => Ok(Some(At {
                v: n,
                span: v.span(),
            })),
            _ => Err(self.err(
                v.span().start,
                key,
                format!("must be an integer from {lo} to {hi}"),
            )),
        }
    }

    /// A duration with a unit (`"5s"`, `"100us"`, `"2h"`) or 0, in ns.
    pub fn duration(&self, key: &str) -> Result<Option<At<u64>>, ControlError> {
        let Some(v) = self.get(key) else {
            return Ok(None);
        };
        let ns = match v.get_ref() {
            DeValue::String(s) => wirelab_core::units::parse_duration_ns(s)
                .map_err(|e| self.err(v.span().start, key, e.to_string()))?,
            DeValue::Integer(i) if i.as_str() == "0" => 0,
            _ => {
                return Err(self.wrong(
                    key,
                    v,
                    "a duration with a unit such as \"5s\" or \"100us\"",
                ))
            }
        };
        Ok(Some(At {
            v: ns,
            span: v.span(),
        }))
    }

    /// A scalar [`Value`].
    pub fn value(&self, key: &str) -> Result<Option<At<Value>>, ControlError> {
        let Some(v) = self.get(key) else {
            return Ok(None);
        };
        scalar(v.get_ref())
            .map(|x| {
                Some(At {
                    v: x,
                    span: v.span(),
                })
            })
            .map_err(|m| self.err(v.span().start, key, m))
    }

    /// An array of strings.
    pub fn strings(&self, key: &str) -> Result<Vec<At<String>>, ControlError> {
        self.array(key, "an array of strings")?
            .iter()
            .map(|x| match x.get_ref() {
                DeValue::String(s) => Ok(At {
                    v: s.to_string(),
                    span: x.span(),
                }),
                _ => Err(self.wrong(key, x, "a string")),
            })
            .collect()
    }

    /// A sub-table (`[a.b]` or an inline `{ ... }`).
    pub fn table(&self, key: &str) -> Result<Option<Tbl<'a, 'i>>, ControlError> {
        self.get(key)
            .map(|v| self.sub(key, v, "a table"))
            .transpose()
    }

    /// The table value of an entry already found by [`Tbl::entries`].
    pub fn sub(
        &self,
        key: &str,
        v: &'a Spanned<DeValue<'i>>,
        want: &str,
    ) -> Result<Tbl<'a, 'i>, ControlError> {
        self.table_at(key, self.key(key), v, want)
    }

    /// An array of tables (`[[flow]]` or `[{...}, {...}]`); element paths
    /// are `key[N]`, 1-based.
    pub fn tables(&self, key: &str) -> Result<Vec<Tbl<'a, 'i>>, ControlError> {
        self.array(key, &format!("an array of tables ([[{key}]])"))?
            .iter()
            .enumerate()
            .map(|(i, x)| self.table_at(key, format!("{}[{}]", self.key(key), i + 1), x, "a table"))
            .collect()
    }
}
