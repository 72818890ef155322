//! The lines of a text exactly as `str::lines` cuts them (at `\n`, a `\r` before it dropped, no
//! empty last line after a final `\n`), found with memchr, and from any line start: the two
//! large texts pfsqos reads every period, `job_stats` (the job_stats reader skims past the
//! counters it does not need, [`LineCursor::seek`]) and a TBF rule listing at the agent's rule
//! cap, are tens of thousands of lines.

/// A cursor over the lines of a text; an iterator of them from [`LineCursor::position`].
#[derive(Clone, Debug)]
pub struct LineCursor<'a> {
    text: &'a str,
    /// Where the next line starts; at most `text.len()`.
    pos: usize,
}

impl<'a> LineCursor<'a> {
    pub fn new(text: &'a str) -> LineCursor<'a> {
        LineCursor { text, pos: 0 }
    }

    /// The byte offset where the next line starts (`text.len()` after the last).
    pub fn position(&self) -> usize {
        self.pos
    }

    /// Goes on from byte `pos`, which must be a line start or the end of the text.
    pub fn seek(&mut self, pos: usize) {
        assert!(pos <= self.text.len(), "seek beyond the text");
        debug_assert!(
            pos == 0 || pos == self.text.len() || self.text.as_bytes()[pos - 1] == b'\n',
            "seek to a position that does not start a line"
        );
        self.pos = pos;
    }
}

impl<'a> Iterator for LineCursor<'a> {
    type Item = &'a str;

    #[inline]
    fn next(&mut self) -> Option<&'a str> {
        let bytes = self.text.as_bytes();
        if self.pos >= bytes.len() {
            return None;
        }
        let line = match memchr::memchr(b'\n', &bytes[self.pos..]) {
            // `\n` is ASCII: both sides of it are char boundaries.
            Some(i) => {
                let line = &self.text[self.pos..self.pos + i];
                self.pos += i + 1;
                line.strip_suffix('\r').unwrap_or(line)
            }
            None => {
                let line = &self.text[self.pos..];
                self.pos = bytes.len();
                line
            }
        };
        debug_assert!(self.pos <= bytes.len());
        Some(line)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The memchr line cutter is `str::lines`.
        #[test]
        fn lines_are_str_lines(text in "[a\r\n \u{e9}]{0,24}") {
            prop_assert_eq!(LineCursor::new(&text).collect::<Vec<_>>(), text.lines().collect::<Vec<_>>());
        }

        /// From any line start, the lines are `str::lines` of the rest; `position` is the
        /// start of the next line.
        #[test]
        fn a_seek_to_a_line_start_reads_the_rest(text in "[a\r\n \u{e9}]{0,24}", pick in 0usize..32) {
            let starts: Vec<usize> = std::iter::once(0)
                .chain(text.match_indices('\n').map(|(i, _)| i + 1))
                .collect();
            let at = starts[pick % starts.len()];
            let mut cursor = LineCursor::new(&text);
            cursor.seek(at);
            prop_assert_eq!(cursor.position(), at);
            let first = cursor.next();
            prop_assert_eq!(first, text[at..].lines().next());
            if first.is_some() {
                let next_start = text[at..].find('\n').map_or(text.len(), |i| at + i + 1);
                prop_assert_eq!(cursor.position(), next_start);
            }
            prop_assert_eq!(cursor.collect::<Vec<_>>(), text[at..].lines().skip(1).collect::<Vec<_>>());
        }
    }
}
