//! The expression language of sweep exclusions, `--only` and a flow's
//! `when`: a condition over one point's parameters.
//!
//! ```text
//! expr    := and ("||" and)*
//! and     := unary ("&&" unary)*
//! unary   := "!" unary | cmp
//! cmp     := primary (("==" | "!=" | "<" | "<=" | ">" | ">=") primary)?
//! primary := "(" expr ")" | NUMBER | STRING | "true" | "false" | IDENT
//! ```
//! Precedence from loose to tight: `||`, `&&`, comparisons (not chained),
//! `!`. Numbers are decimal, optionally negative (`-3`, `2.5`); strings are
//! quoted with `"` or `'` (`\"`, `\'`, `\\` escape); identifiers start with a
//! letter or `_` and may hold letters, digits, `_`, `.` and `-`
//! (`emulate.delay`, `flow.sut.size`), naming a parameter of the point.
//!
//! Comparisons:
//! - two numbers compare as numbers (`80 == 80.0`);
//! - two strings that both read as durations (`"100us"`, `"0.1ms"`, `"0"`)
//!   compare as durations, so `interval < "1ms"` and `"100us" == "0.1ms"`
//!   hold;
//! - a number and a string that reads as a size (`"8080"`, `"9KiB"`), or two
//!   such strings, compare as numbers of bytes (`size > 8972` holds for
//!   `"9KiB"`);
//! - otherwise `==` and `!=` compare the values as written (`size == "80"`
//!   holds for the number 80), and `<`, `<=`, `>`, `>=` are an error;
//! - `&&`, `||` and `!` need `true`/`false` operands and evaluate left to
//!   right, stopping as soon as the answer is known.
//!
//! An unknown parameter is an error naming it and the known ones. Every
//! error carries the byte offset in the expression where it was found.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};
use wirelab_core::units::{parse_bytes, parse_duration_ns};

/// Longest expression accepted, in bytes (keeps parsing and recursion
/// bounded whatever the input).
pub const MAX_LEN: usize = 4096;
/// Deepest nesting of parentheses and `!`.
const MAX_DEPTH: usize = 64;

/// A parameter value: a TOML scalar of the control file or of `--set`.
/// Serialized untagged (`80`, `2.5`, `"udp"`, `true`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Value {
    Int(i64),
    Float(f64),
    Str(String),
    Bool(bool),
}

impl From<&Value> for wirelab_analysis::schema::run::ParamValue {
    fn from(v: &Value) -> Self {
        use wirelab_analysis::schema::run::ParamValue as P;
        match v {
            Value::Int(v) => P::Int(*v),
            Value::Float(v) => P::Float(*v),
            Value::Str(s) => P::Str(s.clone()),
            Value::Bool(b) => P::Bool(*b),
        }
    }
}

impl fmt::Display for Value {
    /// The value as written, strings without quotes (the form substituted
    /// into `{placeholders}` and passed to `wirelab send`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Int(v) => write!(f, "{v}"),
            Value::Float(v) => write!(f, "{v}"),
            Value::Str(s) => f.write_str(s),
            Value::Bool(b) => write!(f, "{b}"),
        }
    }
}

impl Value {
    /// The value in an expression's syntax: strings quoted.
    pub fn literal(&self) -> String {
        match self {
            Value::Str(s) => format!("{s:?}"),
            v => v.to_string(),
        }
    }

    fn type_name(&self) -> &'static str {
        match self {
            Value::Int(_) | Value::Float(_) => "number",
            Value::Str(_) => "string",
            Value::Bool(_) => "true/false",
        }
    }

    fn number(&self) -> Option<f64> {
        match *self {
            Value::Int(v) => Some(v as f64),
            Value::Float(v) => Some(v),
            _ => None,
        }
    }

    /// A number, or a string that reads as a size, as bytes.
    fn bytes(&self) -> Option<f64> {
        match self {
            Value::Str(s) => parse_bytes(s).ok().map(|b| b as f64),
            v => v.number(),
        }
    }

    fn duration(&self) -> Option<u64> {
        match self {
            Value::Str(s) => parse_duration_ns(s).ok(),
            _ => None,
        }
    }
}

/// An expression that could not be parsed or evaluated.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("at character {}: {message}", .pos + 1)]
pub struct ExprError {
    /// Byte offset in the expression (0-based).
    pub pos: usize,
    pub message: String,
}

fn err<T>(pos: usize, message: impl Into<String>) -> Result<T, ExprError> {
    Err(ExprError {
        pos,
        message: message.into(),
    })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CmpOp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl CmpOp {
    fn symbol(self) -> &'static str {
        match self {
            CmpOp::Eq => "==",
            CmpOp::Ne => "!=",
            CmpOp::Lt => "<",
            CmpOp::Le => "<=",
            CmpOp::Gt => ">",
            CmpOp::Ge => ">=",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Node {
    Lit(Value),
    Var {
        name: String,
        pos: usize,
    },
    Not {
        pos: usize,
        e: Box<Node>,
    },
    And(Box<Node>, Box<Node>),
    Or(Box<Node>, Box<Node>),
    Cmp {
        op: CmpOp,
        pos: usize,
        l: Box<Node>,
        r: Box<Node>,
    },
}

/// A parsed expression.
#[derive(Debug, Clone, PartialEq)]
pub struct Expr {
    root: Node,
    src: String,
}

impl fmt::Display for Expr {
    /// The expression as given.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.src)
    }
}

impl Expr {
    /// Parses `s`. Never panics; errors carry the offset of the offending
    /// token.
    pub fn parse(s: &str) -> Result<Expr, ExprError> {
        if s.len() > MAX_LEN {
            return err(MAX_LEN, format!("expression longer than {MAX_LEN} bytes"));
        }
        let toks = lex(s)?;
        let mut p = Parser {
            toks: &toks,
            i: 0,
            depth: 0,
            end: s.len(),
        };
        let root = p.or()?;
        if let Some(t) = p.peek() {
            return err(t.pos, format!("unexpected {}", t.tok.describe()));
        }
        Ok(Expr {
            root,
            src: s.to_string(),
        })
    }

    /// Every parameter the expression names, with its offset, in order of
    /// appearance.
    pub fn variables(&self) -> Vec<(&str, usize)> {
        fn walk<'a>(n: &'a Node, out: &mut Vec<(&'a str, usize)>) {
            match n {
                Node::Lit(_) => {}
                Node::Var { name, pos } => out.push((name, *pos)),
                Node::Not { e, .. } => walk(e, out),
                Node::And(l, r) | Node::Or(l, r) | Node::Cmp { l, r, .. } => {
                    walk(l, out);
                    walk(r, out);
                }
            }
        }
        let mut v = Vec::new();
        walk(&self.root, &mut v);
        v
    }

    /// Evaluates the expression over `vars`; it must give true or false.
    pub fn eval(&self, vars: &BTreeMap<String, Value>) -> Result<bool, ExprError> {
        match eval(&self.root, vars)? {
            Value::Bool(b) => Ok(b),
            v => err(
                0,
                format!("the expression gives {}, not true or false", v.literal()),
            ),
        }
    }
}

fn eval(n: &Node, vars: &BTreeMap<String, Value>) -> Result<Value, ExprError> {
    let boolean = |n: &Node, pos: usize, what: &str| -> Result<bool, ExprError> {
        match eval(n, vars)? {
            Value::Bool(b) => Ok(b),
            v => err(
                pos,
                format!("{what} needs true or false, not {}", v.literal()),
            ),
        }
    };
    Ok(match n {
        Node::Lit(v) => v.clone(),
        Node::Var { name, pos } => match vars.get(name) {
            Some(v) => v.clone(),
            None => {
                let known: Vec<&str> = vars.keys().map(String::as_str).collect();
                return err(
                    *pos,
                    format!(
                        "unknown parameter `{name}`; the parameters are: {}",
                        if known.is_empty() {
                            "none (the sweep is empty)".to_string()
                        } else {
                            known.join(", ")
                        }
                    ),
                );
            }
        },
        Node::Not { pos, e } => Value::Bool(!boolean(e, *pos, "`!`")?),
        Node::And(l, r) => {
            Value::Bool(boolean(l, node_pos(l), "`&&`")? && boolean(r, node_pos(r), "`&&`")?)
        }
        Node::Or(l, r) => {
            Value::Bool(boolean(l, node_pos(l), "`||`")? || boolean(r, node_pos(r), "`||`")?)
        }
        Node::Cmp { op, pos, l, r } => {
            Value::Bool(compare(*op, *pos, &eval(l, vars)?, &eval(r, vars)?)?)
        }
    })
}

fn node_pos(n: &Node) -> usize {
    match n {
        Node::Lit(_) => 0,
        Node::Var { pos, .. } | Node::Not { pos, .. } | Node::Cmp { pos, .. } => *pos,
        Node::And(l, _) | Node::Or(l, _) => node_pos(l),
    }
}

fn compare(op: CmpOp, pos: usize, a: &Value, b: &Value) -> Result<bool, ExprError> {
    use std::cmp::Ordering;
    let ord: Option<Ordering> = if let (Some(x), Some(y)) = (a.number(), b.number()) {
        match (a, b) {
            (Value::Int(x), Value::Int(y)) => Some(x.cmp(y)),
            _ => x.partial_cmp(&y),
        }
    } else if let (Some(x), Some(y)) = (a.duration(), b.duration()) {
        Some(x.cmp(&y))
    } else if let (Some(x), Some(y)) = (a.bytes(), b.bytes()) {
        x.partial_cmp(&y)
    } else {
        None
    };
    let ord = match (ord, op) {
        (Some(o), _) => o,
        (None, CmpOp::Eq) => return Ok(a.to_string() == b.to_string()),
        (None, CmpOp::Ne) => return Ok(a.to_string() != b.to_string()),
        (None, _) => {
            return err(
                pos,
                format!(
                    "cannot order {} ({}) and {} ({}) with {}: <, <=, > and >= compare two numbers \
                     or two durations",
                    a.literal(),
                    a.type_name(),
                    b.literal(),
                    b.type_name(),
                    op.symbol()
                ),
            )
        }
    };
    Ok(match op {
        CmpOp::Eq => ord == Ordering::Equal,
        CmpOp::Ne => ord != Ordering::Equal,
        CmpOp::Lt => ord == Ordering::Less,
        CmpOp::Le => ord != Ordering::Greater,
        CmpOp::Gt => ord == Ordering::Greater,
        CmpOp::Ge => ord != Ordering::Less,
    })
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Num(Value),
    Str(String),
    Ident(String),
    True,
    False,
    LParen,
    RParen,
    Not,
    And,
    Or,
    Cmp(CmpOp),
}

impl Tok {
    fn describe(&self) -> String {
        match self {
            Tok::Num(v) => format!("number {v}"),
            Tok::Str(s) => format!("string {s:?}"),
            Tok::Ident(s) => format!("`{s}`"),
            Tok::True => "`true`".into(),
            Tok::False => "`false`".into(),
            Tok::LParen => "`(`".into(),
            Tok::RParen => "`)`".into(),
            Tok::Not => "`!`".into(),
            Tok::And => "`&&`".into(),
            Tok::Or => "`||`".into(),
            Tok::Cmp(op) => format!("`{}`", op.symbol()),
        }
    }
}

struct Token {
    tok: Tok,
    pos: usize,
}

fn is_ident_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_'
}

fn is_ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-')
}

fn lex(s: &str) -> Result<Vec<Token>, ExprError> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let start = i;
        let two = |t: &[u8; 2]| b.get(i..i + 2) == Some(&t[..]);
        let tok = match c {
            b' ' | b'\t' | b'\n' | b'\r' => {
                i += 1;
                continue;
            }
            b'(' => {
                i += 1;
                Tok::LParen
            }
            b')' => {
                i += 1;
                Tok::RParen
            }
            b'&' if two(b"&&") => {
                i += 2;
                Tok::And
            }
            b'|' if two(b"||") => {
                i += 2;
                Tok::Or
            }
            b'=' if two(b"==") => {
                i += 2;
                Tok::Cmp(CmpOp::Eq)
            }
            b'!' if two(b"!=") => {
                i += 2;
                Tok::Cmp(CmpOp::Ne)
            }
            b'!' => {
                i += 1;
                Tok::Not
            }
            b'<' | b'>' => {
                let eq = b.get(i + 1) == Some(&b'=');
                i += 1 + eq as usize;
                Tok::Cmp(match (c, eq) {
                    (b'<', false) => CmpOp::Lt,
                    (b'<', true) => CmpOp::Le,
                    (_, false) => CmpOp::Gt,
                    (_, true) => CmpOp::Ge,
                })
            }
            b'"' | b'\'' => {
                let (text, next) = lex_string(s, i)?;
                i = next;
                Tok::Str(text)
            }
            b'0'..=b'9' | b'-' | b'.' => {
                i += 1;
                while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'.') {
                    i += 1;
                }
                let text = &s[start..i];
                if i < b.len() && (b[i].is_ascii_alphabetic() || b[i] == b'_') {
                    return err(
                        start,
                        format!(
                            "a number followed by letters: write a duration or size in quotes \
                             (\"{text}{}\")",
                            s[i..]
                                .chars()
                                .take_while(|&c| is_ident_char(c))
                                .collect::<String>()
                        ),
                    );
                }
                Tok::Num(parse_number(text).ok_or_else(|| ExprError {
                    pos: start,
                    message: format!("invalid number `{text}`"),
                })?)
            }
            _ if is_ident_start(c as char) => {
                while i < b.len() && is_ident_char(b[i] as char) {
                    i += 1;
                }
                match &s[start..i] {
                    "true" => Tok::True,
                    "false" => Tok::False,
                    id => Tok::Ident(id.to_string()),
                }
            }
            _ => {
                let ch = s[i..].chars().next().unwrap_or('?');
                let hint = match ch {
                    '=' => ": compare with `==`",
                    '&' => ": `and` is `&&`",
                    '|' => ": `or` is `||`",
                    _ => "",
                };
                return err(start, format!("unexpected character `{ch}`{hint}"));
            }
        };
        out.push(Token { tok, pos: start });
    }
    Ok(out)
}

fn parse_number(t: &str) -> Option<Value> {
    let digits = t.strip_prefix('-').unwrap_or(t);
    if digits.is_empty() || !digits.bytes().any(|c| c.is_ascii_digit()) {
        return None;
    }
    if digits.bytes().all(|c| c.is_ascii_digit()) {
        return t.parse().ok().map(Value::Int);
    }
    if digits.bytes().filter(|&c| c == b'.').count() > 1 {
        return None;
    }
    t.parse::<f64>()
        .ok()
        .filter(|v| v.is_finite())
        .map(Value::Float)
}

/// A quoted string starting at byte `i`; returns the text and the offset
/// after the closing quote.
fn lex_string(s: &str, i: usize) -> Result<(String, usize), ExprError> {
    let quote = s.as_bytes()[i] as char;
    let mut text = String::new();
    let mut it = s[i + 1..].char_indices();
    while let Some((j, c)) = it.next() {
        match c {
            '\\' => match it.next() {
                Some((_, e @ ('"' | '\'' | '\\'))) => text.push(e),
                Some((_, e)) => {
                    return err(
                        i + 1 + j,
                        format!("unknown escape `\\{e}`: only \\\", \\' and \\\\"),
                    )
                }
                None => break,
            },
            c if c == quote => return Ok((text, i + 1 + j + 1)),
            c => text.push(c),
        }
    }
    err(i, "string without its closing quote")
}

struct Parser<'a> {
    toks: &'a [Token],
    i: usize,
    depth: usize,
    end: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<&Token> {
        self.toks.get(self.i)
    }

    fn eat(&mut self, t: &Tok) -> bool {
        if self.peek().is_some_and(|x| &x.tok == t) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    fn deeper(&mut self, pos: usize) -> Result<(), ExprError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return err(pos, format!("nested deeper than {MAX_DEPTH} levels"));
        }
        Ok(())
    }

    fn or(&mut self) -> Result<Node, ExprError> {
        let mut l = self.and()?;
        while self.eat(&Tok::Or) {
            let r = self.and()?;
            l = Node::Or(Box::new(l), Box::new(r));
        }
        Ok(l)
    }

    fn and(&mut self) -> Result<Node, ExprError> {
        let mut l = self.unary()?;
        while self.eat(&Tok::And) {
            let r = self.unary()?;
            l = Node::And(Box::new(l), Box::new(r));
        }
        Ok(l)
    }

    fn unary(&mut self) -> Result<Node, ExprError> {
        if let Some(Token { tok: Tok::Not, pos }) = self.peek() {
            let pos = *pos;
            self.i += 1;
            self.deeper(pos)?;
            let e = self.unary()?;
            self.depth -= 1;
            return Ok(Node::Not {
                pos,
                e: Box::new(e),
            });
        }
        self.cmp()
    }

    fn cmp(&mut self) -> Result<Node, ExprError> {
        let l = self.primary()?;
        if let Some(Token {
            tok: Tok::Cmp(op),
            pos,
        }) = self.peek()
        {
            let (op, pos) = (*op, *pos);
            self.i += 1;
            let r = self.primary()?;
            if let Some(Token {
                tok: Tok::Cmp(_),
                pos,
            }) = self.peek()
            {
                return err(
                    *pos,
                    "comparisons do not chain: join them with && (a < b && b < c)",
                );
            }
            return Ok(Node::Cmp {
                op,
                pos,
                l: Box::new(l),
                r: Box::new(r),
            });
        }
        Ok(l)
    }

    fn primary(&mut self) -> Result<Node, ExprError> {
        let Some(t) = self.toks.get(self.i) else {
            return err(
                self.end,
                "the expression ends early: a value or `(` is missing",
            );
        };
        self.i += 1;
        Ok(match &t.tok {
            Tok::Num(v) => Node::Lit(v.clone()),
            Tok::Str(s) => Node::Lit(Value::Str(s.clone())),
            Tok::True => Node::Lit(Value::Bool(true)),
            Tok::False => Node::Lit(Value::Bool(false)),
            Tok::Ident(name) => Node::Var {
                name: name.clone(),
                pos: t.pos,
            },
            Tok::LParen => {
                self.deeper(t.pos)?;
                let e = self.or()?;
                self.depth -= 1;
                if !self.eat(&Tok::RParen) {
                    return match self.peek() {
                        Some(x) => err(x.pos, format!("expected `)`, found {}", x.tok.describe())),
                        None => err(t.pos, "`(` without its closing `)`"),
                    };
                }
                e
            }
            other => {
                return err(
                    t.pos,
                    format!("expected a value or `(`, found {}", other.describe()),
                )
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars() -> BTreeMap<String, Value> {
        [
            ("size", Value::Int(9000)),
            ("socket", Value::Str("raw".into())),
            ("interval", Value::Str("100us".into())),
            ("emulate.delay", Value::Str("5ms".into())),
            ("echo", Value::Bool(true)),
            ("load", Value::Float(0.5)),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
    }

    fn ev(s: &str) -> bool {
        Expr::parse(s)
            .unwrap_or_else(|e| panic!("{s}: {e}"))
            .eval(&vars())
            .unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    fn perr(s: &str) -> ExprError {
        Expr::parse(s).expect_err(s)
    }

    fn eerr(s: &str) -> ExprError {
        Expr::parse(s).unwrap().eval(&vars()).expect_err(s)
    }

    #[test]
    fn reference_exclusion() {
        assert!(ev(r#"socket != "udp" && size > 8972"#));
        let mut v = vars();
        v.insert("socket".into(), Value::Str("udp".into()));
        let e = Expr::parse(r#"socket != "udp" && size > 8972"#).unwrap();
        assert!(!e.eval(&v).unwrap());
    }

    #[test]
    fn precedence() {
        // && binds tighter than ||.
        assert!(ev("true || false && false"));
        assert!(!ev("(true || false) && false"));
        // ! binds tighter than && and ||.
        assert!(!ev("!true && true"));
        assert!(ev("!(true && false)"));
        assert!(ev("!false || false"));
        // comparisons bind tighter than && and ||.
        assert!(ev("size == 9000 || size == 80 && socket == \"udp\""));
        assert!(!ev("(size == 9000 || size == 80) && socket == \"udp\""));
        assert!(ev("!!echo"));
    }

    #[test]
    fn comparisons() {
        assert!(ev(
            "size >= 9000 && size <= 9000 && size < 9001 && size > -1"
        ));
        assert!(ev("load == 0.5 && load < 1 && size == 9000.0"));
        assert!(ev(
            "interval < \"1ms\" && interval == \"0.1ms\" && interval > '10us'"
        ));
        assert!(ev("emulate.delay == \"5ms\" && emulate.delay != \"0ms\""));
        assert!(
            ev("size == \"9000\""),
            "number and string compare as written"
        );
        assert!(ev(
            "size > \"8KiB\" && size < \"9KiB\" && \"1500\" < \"9000\""
        ));
        assert!(ev("socket == 'raw' && socket != \"udp\""));
        assert!(ev("echo == true && echo != false && echo"));
        assert!(ev("'a\\'b' == \"a'b\""));
    }

    #[test]
    fn parse_errors_carry_positions() {
        let e = perr("size > ");
        assert_eq!(e.pos, 7);
        assert!(e.message.contains("ends early"), "{e}");
        let e = perr("size = 80");
        assert_eq!(e.pos, 5);
        assert!(e.message.contains("`==`"), "{e}");
        let e = perr("(size == 80");
        assert_eq!(e.pos, 0);
        assert!(e.message.contains("closing `)`"), "{e}");
        let e = perr("size == 80)");
        assert_eq!((e.pos, e.message.as_str()), (10, "unexpected `)`"));
        let e = perr("socket == \"udp");
        assert_eq!(e.pos, 10);
        assert!(e.message.contains("closing quote"), "{e}");
        let e = perr("interval > 10us");
        assert_eq!(e.pos, 11);
        assert!(e.message.contains("\"10us\""), "{e}");
        let e = perr("1 < size < 3");
        assert_eq!(e.pos, 9);
        assert!(e.message.contains("do not chain"), "{e}");
        let e = perr("size && || echo");
        assert_eq!(e.pos, 8);
        assert!(e.message.contains("found `||`"), "{e}");
        assert_eq!(perr("a & b").pos, 2);
        assert_eq!(perr("").pos, 0);
        assert_eq!(perr("'x\\n'").pos, 2);
        assert!(perr(&"(".repeat(100)).message.contains("nested deeper"));
        assert!(perr(&"x".repeat(MAX_LEN + 1)).message.contains("longer"));
        assert_eq!(
            perr("size = 80").to_string(),
            "at character 6: unexpected character `=`: compare with `==`"
        );
    }

    #[test]
    fn eval_errors() {
        let e = eerr("sise > 80");
        assert_eq!(e.pos, 0);
        assert!(e.message.contains("unknown parameter `sise`"), "{e}");
        assert!(
            e.message
                .contains("emulate.delay, interval, load, size, socket"),
            "{e}"
        );
        let e = eerr("socket < \"udp\"");
        assert_eq!(e.pos, 7);
        assert!(e.message.contains("cannot order \"raw\" (string)"), "{e}");
        let e = eerr("size && echo");
        assert!(
            e.message.contains("`&&` needs true or false, not 9000"),
            "{e}"
        );
        let e = eerr("!size");
        assert!(e.message.contains("`!` needs"), "{e}");
        let e = eerr("size");
        assert!(e.message.contains("gives 9000, not true or false"), "{e}");
        // Short-circuit: the right side is not looked at.
        assert!(!ev("false && nosuch == 1"));
        assert!(ev("true || nosuch == 1"));
    }

    #[test]
    fn variables_listed() {
        let e = Expr::parse("a == 1 || !(b.c-d < 2)").unwrap();
        assert_eq!(e.variables(), vec![("a", 0), ("b.c-d", 12)]);
        assert_eq!(e.to_string(), "a == 1 || !(b.c-d < 2)");
    }

    #[test]
    fn value_forms() {
        assert_eq!(Value::Str("udp".into()).to_string(), "udp");
        assert_eq!(Value::Str("udp".into()).literal(), "\"udp\"");
        assert_eq!(Value::Float(2.5).to_string(), "2.5");
        assert_eq!(serde_json::to_string(&Value::Int(80)).unwrap(), "80");
        let v: Vec<Value> = serde_json::from_str(r#"[80, 2.5, "x", true]"#).unwrap();
        assert_eq!(
            v,
            vec![
                Value::Int(80),
                Value::Float(2.5),
                Value::Str("x".into()),
                Value::Bool(true)
            ]
        );
    }
}
