//! The page: headings, tables (sortable by a click on a column head, by a
//! few lines of inline script) and figures, with inline CSS. Nothing on the
//! page refers to another file or URL.

use std::fmt::Write;

/// Escapes text for HTML content and attribute values.
pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
    o
}

/// A JSON value as a table shows it: strings without quotes.
pub fn value_text(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        v => v.to_string(),
    }
}

/// One table cell: what is shown and, for numbers, the value it sorts by.
#[derive(Debug, Clone, PartialEq)]
pub struct Cell {
    pub text: String,
    pub sort: Option<f64>,
}

impl Cell {
    pub fn text(s: impl Into<String>) -> Cell {
        Cell {
            text: s.into(),
            sort: None,
        }
    }
    pub fn num(text: impl Into<String>, v: f64) -> Cell {
        Cell {
            text: text.into(),
            sort: v.is_finite().then_some(v),
        }
    }
    /// A count, or `-` when unknown.
    pub fn count(v: Option<u64>) -> Cell {
        match v {
            Some(v) => Cell::num(v.to_string(), v as f64),
            None => Cell::text("-"),
        }
    }
}

const CSS: &str =
    "body{font-family:sans-serif;margin:1.5em auto;max-width:70em;padding:0 1em;color:#222}\
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:1.6em;border-bottom:1px solid #ccc}\
h3{font-size:1em;margin:1em 0 .3em}\
table{border-collapse:collapse;font-size:.85em;margin:.5em 0}\
th,td{border:1px solid #ddd;padding:.2em .5em;text-align:right}\
th{background:#f3f3f3}th.sort{cursor:pointer}td.l,th.l{text-align:left}\
tr.total td{font-weight:bold}\
figure{margin:1em 0}figure svg{max-width:100%;height:auto}\
figcaption{font-size:.85em;color:#555}\
.row{display:flex;flex-wrap:wrap;gap:1.5em;align-items:flex-start}.row p{margin:.3em 0;font-weight:bold}\
th,td{white-space:nowrap}table.kv td.l{white-space:normal;max-width:24em;overflow-wrap:anywhere}\
.wide{overflow-x:auto}td:first-child{white-space:nowrap}.warn{color:#a40}pre{font-size:.75em;background:#f7f7f7;padding:.5em;overflow:auto}";

const SCRIPT: &str = "document.querySelectorAll('table.sortable').forEach(function(t){\
t.querySelectorAll('th').forEach(function(th,i){th.classList.add('sort');\
th.addEventListener('click',function(){var b=t.tBodies[0];var up=th.dataset.dir!=='up';\
th.dataset.dir=up?'up':'down';var rows=Array.prototype.slice.call(b.rows).filter(function(r){return !r.classList.contains('total')});\
var key=function(r){var c=r.cells[i];if(!c)return '';var v=c.dataset.v;return v===undefined?c.textContent:parseFloat(v)};\
rows.sort(function(a,c){var x=key(a),y=key(c);if(typeof x==='number'&&typeof y==='number')return up?x-y:y-x;\
if(typeof x==='number')return -1;if(typeof y==='number')return 1;return up?String(x).localeCompare(y):String(y).localeCompare(x)});\
rows.forEach(function(r){b.insertBefore(r,b.querySelector('tr.total'))});});});});";

/// A page being built.
pub struct Page {
    title: String,
    body: String,
    figures: usize,
}

impl Page {
    pub fn new(title: &str) -> Page {
        let mut body = String::new();
        let _ = writeln!(body, "<h1>{}</h1>", esc(title));
        Page {
            title: title.to_string(),
            body,
            figures: 0,
        }
    }

    /// Starts a row of blocks side by side (closed by [`Page::end_row`]).
    pub fn begin_row(&mut self) {
        self.body.push_str("<div class=\"row\">\n");
    }
    /// Starts one block of a row, with a caption line.
    pub fn begin_block(&mut self, caption: &str) {
        let _ = writeln!(self.body, "<div><p>{}</p>", esc(caption));
    }
    pub fn end_block(&mut self) {
        self.body.push_str("</div>\n");
    }
    pub fn end_row(&mut self) {
        self.body.push_str("</div>\n");
    }

    pub fn h2(&mut self, s: &str) {
        let id: String = s
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() {
                    c.to_ascii_lowercase()
                } else {
                    '-'
                }
            })
            .collect();
        let _ = writeln!(self.body, "<h2 id=\"{}\">{}</h2>", esc(&id), esc(s));
    }

    pub fn para(&mut self, s: &str) {
        let _ = writeln!(self.body, "<p>{}</p>", esc(s));
    }

    pub fn warning(&mut self, s: &str) {
        let _ = writeln!(self.body, "<p class=\"warn\">{}</p>", esc(s));
    }

    /// A table; `sortable` adds click-to-sort on its column heads. Rows
    /// whose first cell is `total` stay at the bottom.
    pub fn table(&mut self, heads: &[&str], rows: &[Vec<Cell>], sortable: bool) {
        self.table_class(heads, rows, if sortable { "sortable" } else { "" });
    }

    fn table_class(&mut self, heads: &[&str], rows: &[Vec<Cell>], class: &str) {
        let cls = if class.is_empty() {
            String::new()
        } else {
            format!(" class=\"{class}\"")
        };
        let _ = write!(self.body, "<div class=\"wide\"><table{cls}><thead><tr>");
        for (i, h) in heads.iter().enumerate() {
            let l = if i == 0 { " class=\"l\"" } else { "" };
            let _ = write!(self.body, "<th{l}>{}</th>", esc(h));
        }
        let _ = write!(self.body, "</tr></thead><tbody>");
        for r in rows {
            let total = r.first().is_some_and(|c| c.text == "total");
            let _ = write!(
                self.body,
                "{}",
                if total {
                    "<tr class=\"total\">"
                } else {
                    "<tr>"
                }
            );
            for (i, c) in r.iter().enumerate() {
                let l = if i == 0 || c.sort.is_none() {
                    " class=\"l\""
                } else {
                    ""
                };
                let v = c
                    .sort
                    .map(|v| format!(" data-v=\"{v}\""))
                    .unwrap_or_default();
                let _ = write!(self.body, "<td{l}{v}>{}</td>", esc(&c.text));
            }
            let _ = write!(self.body, "</tr>");
        }
        let _ = writeln!(self.body, "</tbody></table></div>");
    }

    /// Key → value rows.
    pub fn kv(&mut self, rows: &[(String, String)]) {
        let rows: Vec<Vec<Cell>> = rows
            .iter()
            .map(|(k, v)| vec![Cell::text(k.clone()), Cell::text(v.clone())])
            .collect();
        self.table_class(&["key", "value"], &rows, "kv");
    }

    /// The section "Configuration and environment": a log's metadata
    /// object as key → value rows (nothing when it is not an object).
    pub fn metadata(&mut self, metadata: Option<&serde_json::Value>) {
        if let Some(serde_json::Value::Object(m)) = metadata {
            self.h2("Configuration and environment");
            let kv: Vec<(String, String)> =
                m.iter().map(|(k, v)| (k.clone(), value_text(v))).collect();
            self.kv(&kv);
        }
    }

    /// A figure: its title (a heading), the SVG, a caption.
    pub fn figure(&mut self, title: &str, svg: &str, caption: &str) {
        self.figures += 1;
        let _ = writeln!(
            self.body,
            "<figure><h3>{}</h3>\n{svg}\n<figcaption>{}</figcaption></figure>",
            esc(title),
            esc(caption)
        );
    }

    /// Collapsed preformatted text (e.g. the analysis JSON).
    pub fn details(&mut self, summary: &str, text: &str) {
        let _ = writeln!(
            self.body,
            "<details><summary>{}</summary><pre>{}</pre></details>",
            esc(summary),
            esc(text)
        );
    }

    pub fn figures(&self) -> usize {
        self.figures
    }

    /// The whole document.
    pub fn finish(self) -> String {
        format!(
            "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
             <meta name=\"generator\" content=\"wirelab {}\"><title>{}</title>\
             <style>{CSS}</style></head><body>\n{}<script>{SCRIPT}</script></body></html>\n",
            env!("CARGO_PKG_VERSION"),
            esc(&self.title),
            self.body
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_escaped_and_nothing_is_fetched() {
        let mut p = Page::new("a<b>&\"c'");
        p.table(
            &["flow", "x"],
            &[
                vec![Cell::text("<script>"), Cell::num("1 ms", 1e6)],
                vec![Cell::text("total"), Cell::count(None)],
            ],
            true,
        );
        p.figure("t", "<svg></svg>", "c&d");
        let s = p.finish();
        assert!(s.contains("a&lt;b&gt;&amp;&quot;c&#39;"));
        assert!(s.contains("&lt;script&gt;") && !s.contains("<script>&lt;"));
        assert!(s.contains("<td data-v=\"1000000\">1 ms</td>"), "{s}");
        assert!(s.contains("<tr class=\"total\">"));
        assert!(!s.contains("http:") && !s.contains("https:") && !s.contains(" src="));
        assert_eq!(s.matches("<figure>").count(), 1);
    }
}
