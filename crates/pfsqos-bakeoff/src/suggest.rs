//! "Did you mean": the closest allowed name to a misspelt one, by edit distance.

/// Longest name compared (a longer input is not a typo of a short name).
pub const NAME_CHARS_MAX: usize = 128;

/// Edit distance with adjacent transpositions (optimal string alignment), over characters,
/// case-insensitive: `vpsf` is one edit from `vpfs`. Inputs are short (names).
pub fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().flat_map(char::to_lowercase).collect();
    let b: Vec<char> = b.chars().flat_map(char::to_lowercase).collect();
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut v = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                v = v.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = v;
        }
    }
    d[a.len()][b.len()]
}

/// The allowed name closest to `input`, when it is close enough to be a typo: at most a third
/// of the longer name's characters differ (at least one edit allowed), or one is a prefix of
/// the other. Ties go to the first in `allowed`.
pub fn closest<'a>(input: &str, allowed: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    if input.is_empty() || input.chars().count() > NAME_CHARS_MAX {
        return None;
    }
    let lower = input.to_lowercase();
    let mut best: Option<(usize, &str)> = None;
    for name in allowed {
        let d = edit_distance(input, name);
        let longer = input.chars().count().max(name.chars().count());
        let prefix =
            name.to_lowercase().starts_with(&lower) || lower.starts_with(&name.to_lowercase());
        if d == 0 || !(d <= (longer / 3).max(1) || prefix) {
            continue;
        }
        if best.is_none_or(|(bd, _)| d < bd) {
            best = Some((d, name));
        }
    }
    best.map(|(_, n)| n)
}

/// `"; did you mean `x`?"` for a near miss, or nothing.
pub fn did_you_mean<'a>(input: &str, allowed: impl IntoIterator<Item = &'a str>) -> String {
    closest(input, allowed)
        .map(|n| format!("; did you mean `{n}`?"))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    const NAMES: &[&str] = &[
        "nobw", "static", "adaptbf", "gift", "vpfs", "pi", "aimd", "iez",
    ];

    #[test]
    fn near_misses_get_a_suggestion_and_strangers_none() {
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(closest("adaptfb", NAMES.iter().copied()), Some("adaptbf"));
        assert_eq!(closest("AdapTBF2", NAMES.iter().copied()), Some("adaptbf"));
        assert_eq!(closest("vpsf", NAMES.iter().copied()), Some("vpfs"));
        assert_eq!(closest("stat", NAMES.iter().copied()), Some("static"));
        assert_eq!(closest("warp", NAMES.iter().copied()), None);
        assert_eq!(
            closest("gift", NAMES.iter().copied()),
            None,
            "an exact name is no typo"
        );
        assert_eq!(
            did_you_mean("gfit", NAMES.iter().copied()),
            "; did you mean `gift`?"
        );
        assert_eq!(did_you_mean("zzzzzz", NAMES.iter().copied()), "");
    }
}
