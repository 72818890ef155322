//! Layout sanity of the client: a layout from the MDS is checked against this cluster before
//! any I/O uses it. The RAID-0 arithmetic and the RPC formation rule are
//! `pfsqos_node::client`'s, shared with the simulator.

use pfsqos_wire::mds::FileLayout;

/// Layout sanity before use: the protocol decoder bounds the sizes; this checks the layout
/// makes sense for this cluster.
pub fn check_layout(layout: &FileLayout, ost_count: u32) -> Result<(), String> {
    let ss = layout.stripe_size_bytes;
    let unit = pfsqos_core::place::STRIPE_SIZE_UNIT_BYTES;
    if ss == 0 || !ss.is_multiple_of(unit) || ss > pfsqos_core::place::STRIPE_SIZE_BYTES_MAX {
        return Err(format!(
            "stripe size {ss} is not a multiple of {unit} up to {}",
            pfsqos_core::place::STRIPE_SIZE_BYTES_MAX
        ));
    }
    if layout.stripes.is_empty() || layout.stripes.len() > ost_count as usize {
        return Err(format!(
            "{} stripes on a file system of {ost_count} OSTs",
            layout.stripes.len()
        ));
    }
    if let Some(s) = layout.stripes.iter().find(|s| s.ost >= ost_count) {
        return Err(format!("stripe on OST {} of {ost_count}", s.ost));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use pfsqos_wire::mds::Stripe;

    fn layout(ss: u64, n: u32) -> FileLayout {
        FileLayout {
            stripe_size_bytes: ss,
            stripes: (0..n)
                .map(|i| Stripe {
                    ost: i,
                    object: 100 + i as u64,
                })
                .collect(),
        }
    }

    #[test]
    fn layout_checks() {
        assert!(check_layout(&layout(1 << 20, 2), 2).is_ok());
        assert!(check_layout(&layout(1 << 20, 3), 2).is_err());
        assert!(check_layout(&layout(1000, 1), 2).is_err());
        assert!(check_layout(&layout(0, 1), 2).is_err());
        assert!(check_layout(
            &FileLayout {
                stripe_size_bytes: 1 << 16,
                stripes: vec![]
            },
            2
        )
        .is_err());
    }
}
