//! pfsqos's TOML input files (scenarios, cluster files, device profiles) share one error,
//! [`FileError`], and one way of tying it back to the text: the dotted field path of a serde
//! error, and the value as written with its line and column, so an error reads
//! `job[1].processes[0].bs`, `"0k"`, line 14, column 6. [`parse`] deserializes a file's text;
//! [`locate`] ties a later validation error to the text.

use std::collections::BTreeMap;
use std::fmt;
use std::ops::Range;

use serde::de::{self, Deserialize, DeserializeOwned, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_path_to_error::Segment;
use toml::Spanned;

/// An input file that cannot be used, with the file, the field, the value and what is allowed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileError {
    /// The file (or a name such as `<string>` for text not read from a file).
    pub file: String,
    /// Dotted path of the offending field, e.g. `job[1].processes[0].bs`; empty for a syntax
    /// error that is not tied to one field.
    pub field: String,
    /// The offending value as written, if there is one.
    pub value: Option<String>,
    /// What is wrong and what is allowed.
    pub message: String,
}

impl FileError {
    /// An error of the whole file (it cannot be read, it is too long, ...).
    pub fn of_file(file: &str, message: String) -> FileError {
        FileError {
            file: file.to_string(),
            field: String::new(),
            value: None,
            message,
        }
    }
}

impl fmt::Display for FileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file)?;
        if !self.field.is_empty() {
            write!(f, ": field `{}`", self.field)?;
        }
        if let Some(v) = &self.value {
            write!(f, ": value `{v}`")?;
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for FileError {}

/// Longest value text an error quotes; longer values are cut with `...`.
const VALUE_TEXT_LEN_MAX: usize = 80;

/// Deserializes `text` (of `file`) and turns a failure into an error with the field path, the
/// value as written and its line and column.
pub fn parse<T: DeserializeOwned>(text: &str, file: &str) -> Result<T, FileError> {
    let de = toml::Deserializer::new(text);
    serde_path_to_error::deserialize(de).map_err(|e| {
        let mut field = path_text(e.path());
        let inner = e.inner();
        let mut message = friendly(inner.message());
        let mut value = None;
        let span = inner.span();
        if let Some(name) = quoted_after(&message, "unknown field `") {
            // Depending on where the key sits, the path may stop at the table holding it.
            if !(field == name || field.ends_with(&format!(".{name}"))) {
                field = join(&field, &name);
            }
            message = format!("unknown field `{name}`; {}", allowed_fields(&message));
        } else if let Some(name) = quoted_after(&message, "missing field `") {
            field = join(&field, &name);
            message = format!("missing required field `{name}`");
        } else if let Some(span) = span.clone() {
            if !field.is_empty() && !is_table_text(text, &span) {
                value = Some(value_text(text, span));
            }
        }
        if let Some(span) = span {
            message = format!("{message} ({})", line_col(text, span.start));
        }
        FileError {
            file: file.to_string(),
            field,
            value,
            message,
        }
    })
}

/// Replaces the normalized value of a validation error by the value as written in `text` and
/// adds its line and column, when the field is written in the file (defaults are not).
pub fn locate(text: &str, mut err: FileError) -> FileError {
    let Ok(tree) = toml::from_str::<Spanned<Node>>(text) else {
        return err;
    };
    if let Some(span) = find(&tree, &err.field) {
        if err.value.is_some() && !is_table_text(text, &span) {
            err.value = Some(value_text(text, span.clone()));
        }
        err.message = format!("{} ({})", err.message, line_col(text, span.start));
    }
    err
}

/// A serde path as a dotted field path (`oss[0].listen`).
pub fn path_text(path: &serde_path_to_error::Path) -> String {
    let mut out = String::new();
    for seg in path {
        match seg {
            Segment::Seq { index } => out.push_str(&format!("[{index}]")),
            Segment::Map { key } | Segment::Enum { variant: key } => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(key);
            }
            Segment::Unknown => {}
        }
    }
    out
}

/// One line, and serde's Rust type names in words a scenario author knows.
fn friendly(message: &str) -> String {
    let one_line: Vec<&str> = message
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let mut m = one_line.join("; ");
    for (rust, words) in [
        (
            "expected u32",
            "expected a whole number from 0 to 4294967295",
        ),
        ("expected u64", "expected a whole number from 0 to 2^64-1"),
        ("expected f64", "expected a number"),
        ("expected a string", "expected a quoted string"),
    ] {
        m = m.replace(rust, words);
    }
    m
}

fn join(parent: &str, name: &str) -> String {
    if parent.is_empty() {
        name.to_string()
    } else {
        format!("{parent}.{name}")
    }
}

/// The text between `prefix` and the next backquote in `message`.
fn quoted_after(message: &str, prefix: &str) -> Option<String> {
    let rest = &message[message.find(prefix)? + prefix.len()..];
    Some(rest[..rest.find('`')?].to_string())
}

/// serde's "unknown field `x`, expected one of `a`, `b`" rephrased as "allowed: a, b".
fn allowed_fields(message: &str) -> String {
    match message.find("expected ") {
        Some(i) => {
            let list = message[i + "expected ".len()..]
                .trim_start_matches("one of ")
                .replace("` or `", "`, `")
                .replace('`', "");
            format!("allowed: {list}")
        }
        None => "no fields allowed here".to_string(),
    }
}

/// A span covering a whole `[table]` is no value to quote.
fn is_table_text(text: &str, span: &Range<usize>) -> bool {
    text.get(span.clone())
        .is_some_and(|t| t.trim_start().starts_with('[') && t.contains('\n'))
}

fn value_text(text: &str, span: Range<usize>) -> String {
    let raw = text.get(span).unwrap_or("").trim();
    if raw.chars().count() > VALUE_TEXT_LEN_MAX {
        let cut: String = raw.chars().take(VALUE_TEXT_LEN_MAX).collect();
        format!("{cut}...")
    } else {
        raw.to_string()
    }
}

/// `line L, column C` (1-based) of byte `offset` of `text`.
pub fn line_col(text: &str, offset: usize) -> String {
    let before = text.get(..offset).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    format!("line {line}, column {column}")
}

/// The shape of a TOML document with the span of every value.
enum Node {
    Table(BTreeMap<String, Spanned<Node>>),
    Array(Vec<Spanned<Node>>),
    Leaf,
}

impl<'de> Deserialize<'de> for Node {
    fn deserialize<D: Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Node;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any TOML value")
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Node, E> {
                Ok(Node::Leaf)
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Node, E> {
                Ok(Node::Leaf)
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Node, E> {
                Ok(Node::Leaf)
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Node, E> {
                Ok(Node::Leaf)
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Node, E> {
                Ok(Node::Leaf)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Node, A::Error> {
                let mut items = Vec::new();
                while let Some(item) = seq.next_element()? {
                    items.push(item);
                }
                Ok(Node::Array(items))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Node, A::Error> {
                let mut entries = BTreeMap::new();
                while let Some(key) = map.next_key::<String>()? {
                    let value: Spanned<Node> = map.next_value()?;
                    entries.insert(key, value);
                }
                Ok(Node::Table(entries))
            }
        }
        de.deserialize_any(V)
    }
}

/// The span of the value at `path` (`job[1].processes[0].bs`), if it is written in the file.
pub fn span_of(text: &str, path: &str) -> Option<Range<usize>> {
    let tree = toml::from_str::<Spanned<Node>>(text).ok()?;
    find(&tree, path)
}

fn find(root: &Spanned<Node>, path: &str) -> Option<Range<usize>> {
    if path.is_empty() {
        return None;
    }
    let mut node = root;
    for part in path.split('.') {
        let (key, indexes) = match part.find('[') {
            Some(i) => (&part[..i], &part[i..]),
            None => (part, ""),
        };
        node = match node.get_ref() {
            Node::Table(t) => t.get(key)?,
            _ => return None,
        };
        for index in indexes.split(['[', ']']).filter(|s| !s.is_empty()) {
            let i: usize = index.parse().ok()?;
            node = match node.get_ref() {
                Node::Array(a) => a.get(i)?,
                _ => return None,
            };
        }
    }
    Some(node.span())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct File {
        name: String,
        #[serde(default)]
        part: Vec<Part>,
    }

    #[derive(Debug, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Part {
        size: u32,
    }

    #[test]
    fn parse_names_the_field_the_value_and_where() {
        let e = parse::<File>("name = \"a\"\n[[part]]\nsize = \"8\"\n", "f.toml").unwrap_err();
        assert_eq!(e.file, "f.toml");
        assert_eq!(e.field, "part[0].size");
        assert_eq!(e.value.as_deref(), Some("\"8\""));
        assert!(
            e.message
                .contains("expected a whole number from 0 to 4294967295"),
            "{e}"
        );
        assert!(e.message.ends_with("(line 3, column 8)"), "{e}");
        let e = parse::<File>("name = \"a\"\nsize = 3\n", "f.toml").unwrap_err();
        assert_eq!(e.field, "size");
        assert!(
            e.message
                .starts_with("unknown field `size`; allowed: name, part"),
            "{e}"
        );
        let e = parse::<File>("[[part]]\nsize = 1\n", "f.toml").unwrap_err();
        assert!(
            e.message.starts_with("missing required field `name`"),
            "{e}"
        );
        assert_eq!(
            e.to_string().split(": ").take(2).collect::<Vec<_>>(),
            ["f.toml", "field `name`"]
        );
    }

    #[test]
    fn locate_quotes_the_value_as_written() {
        let text = "name = \"a\"\n[[part]]\nsize = 0x10\n";
        let e = FileError {
            file: "f.toml".into(),
            field: "part[0].size".into(),
            value: Some("16".into()),
            message: "must be odd".into(),
        };
        let e = locate(text, e);
        assert_eq!(e.value.as_deref(), Some("0x10"));
        assert_eq!(e.message, "must be odd (line 3, column 8)");
        assert_eq!(span_of(text, "name").map(|s| &text[s]), Some("\"a\""));
    }

    const TEXT: &str =
        "a = 1\n[t]\nb = \"x\"\n[[arr]]\nc = [10, 20]\n[[arr]]\nc = [30, { d = 4 }]\n";

    fn at(path: &str) -> Option<&'static str> {
        let tree: Spanned<Node> = toml::from_str(TEXT).unwrap();
        find(&tree, path).map(|s| &TEXT[s])
    }

    #[test]
    fn finds_values_by_dotted_path() {
        assert_eq!(at("a"), Some("1"));
        assert_eq!(at("t.b"), Some("\"x\""));
        assert_eq!(at("arr[0].c[1]"), Some("20"));
        assert_eq!(at("arr[1].c[1].d"), Some("4"));
        assert_eq!(at("arr[2].c"), None);
        assert_eq!(at("t.missing"), None);
        assert_eq!(at("a.b"), None);
        assert_eq!(at(""), None);
    }

    #[test]
    fn line_and_column_are_one_based() {
        assert_eq!(line_col(TEXT, 0), "line 1, column 1");
        let off = TEXT.find("b =").unwrap();
        assert_eq!(line_col(TEXT, off + 4), "line 3, column 5");
    }

    #[test]
    fn long_values_are_cut() {
        let text = "x".repeat(200);
        let v = value_text(&text, 0..200);
        assert_eq!(v.len(), VALUE_TEXT_LEN_MAX + 3);
        assert!(v.ends_with("..."));
    }

    #[test]
    fn messages_become_one_line_in_plain_words() {
        assert_eq!(
            friendly("invalid type: string \"8\", expected u32\n"),
            "invalid type: string \"8\", expected a whole number from 0 to 4294967295"
        );
        assert_eq!(
            friendly("invalid table header\nexpected `.`, `]`\n"),
            "invalid table header; expected `.`, `]`"
        );
        assert_eq!(
            allowed_fields("unknown field `x`, expected one of `a`, `b`"),
            "allowed: a, b"
        );
        assert_eq!(
            allowed_fields("unknown field `x`, expected `a` or `b`"),
            "allowed: a, b"
        );
        assert_eq!(
            quoted_after("unknown field `x`, expected", "unknown field `"),
            Some("x".to_string())
        );
    }
}

/// `text` with the value at `field` (a dotted path with indexes, `oss[0].threads`) replaced by
/// the integer −1, when that value is there and is not an integer: a file that fails only on
/// the type of one integer field, validated again this way, says the range that field
/// allows. `None` when the text does not parse, the path is not in it, or it holds an integer.
pub fn with_integer_probe(text: &str, field: &str) -> Option<String> {
    let mut doc: toml::Value = toml::from_str(text).ok()?;
    let mut at = &mut doc;
    for part in field.split('.') {
        let (key, indexes) = part.split_at(part.find('[').unwrap_or(part.len()));
        at = at.as_table_mut()?.get_mut(key)?;
        for index in indexes.split(['[', ']']).filter(|s| !s.is_empty()) {
            at = at.as_array_mut()?.get_mut(index.parse::<usize>().ok()?)?;
        }
    }
    if at.is_integer() {
        return None;
    }
    *at = toml::Value::Integer(-1);
    toml::to_string(&doc).ok()
}

#[cfg(test)]
mod integer_probe_tests {
    use super::with_integer_probe;

    #[test]
    fn the_probe_replaces_only_a_non_integer_at_the_path() {
        let text = "a = 1\n[[oss]]\nthreads = \"eight\"\n";
        let probed = with_integer_probe(text, "oss[0].threads").unwrap();
        let doc: toml::Value = toml::from_str(&probed).unwrap();
        assert_eq!(doc["oss"][0]["threads"].as_integer(), Some(-1));
        assert_eq!(doc["a"].as_integer(), Some(1));
        assert_eq!(with_integer_probe(text, "a"), None, "an integer stays");
        assert_eq!(with_integer_probe(text, "oss[1].threads"), None);
        assert_eq!(with_integer_probe(text, "b"), None);
    }
}
