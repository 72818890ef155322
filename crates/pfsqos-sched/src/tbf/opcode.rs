//! Lustre's RPC opcode names (`ll_rpc_opcode_table` in `lustre/ptlrpc/lproc_ptlrpc.c`, values
//! from `lustre_idl.h`), which TBF's `opcode={...}` accepts through `ll_str2opcode`.

use crate::model::Opcode;

/// `(opcode, name)` for every named entry of the table, in table order.
pub const LUSTRE_OPCODES: [(u16, &str); 92] = [
    (0, "ost_reply"),
    (1, "ost_getattr"),
    (2, "ost_setattr"),
    (3, "ost_read"),
    (4, "ost_write"),
    (5, "ost_create"),
    (6, "ost_destroy"),
    (7, "ost_get_info"),
    (8, "ost_connect"),
    (9, "ost_disconnect"),
    (10, "ost_punch"),
    (11, "ost_open"),
    (12, "ost_close"),
    (13, "ost_statfs"),
    (16, "ost_sync"),
    (17, "ost_set_info"),
    (18, "ost_quotacheck"),
    (19, "ost_quotactl"),
    (20, "ost_quota_adjust_qunit"),
    (21, "ost_ladvise"),
    (22, "ost_fallocate"),
    (23, "ost_seek"),
    (33, "mds_getattr"),
    (34, "mds_getattr_lock"),
    (35, "mds_close"),
    (36, "mds_reint"),
    (37, "mds_readpage"),
    (38, "mds_connect"),
    (39, "mds_disconnect"),
    (40, "mds_get_root"),
    (41, "mds_statfs"),
    (42, "mds_pin"),
    (43, "mds_unpin"),
    (44, "mds_sync"),
    (45, "mds_done_writing"),
    (46, "mds_set_info"),
    (47, "mds_quotacheck"),
    (48, "mds_quotactl"),
    (49, "mds_getxattr"),
    (50, "mds_setxattr"),
    (51, "mds_writepage"),
    (52, "mds_is_subdir"),
    (53, "mds_get_info"),
    (54, "mds_hsm_state_get"),
    (55, "mds_hsm_state_set"),
    (56, "mds_hsm_action"),
    (57, "mds_hsm_progress"),
    (58, "mds_hsm_request"),
    (59, "mds_hsm_ct_register"),
    (60, "mds_hsm_ct_unregister"),
    (61, "mds_swap_layouts"),
    (62, "mds_rmfid"),
    (63, "mds_batch"),
    (64, "mds_hsm_data_version"),
    (101, "ldlm_enqueue"),
    (102, "ldlm_convert"),
    (103, "ldlm_cancel"),
    (104, "ldlm_bl_callback"),
    (105, "ldlm_cp_callback"),
    (106, "ldlm_gl_callback"),
    (107, "ldlm_set_info"),
    (250, "mgs_connect"),
    (251, "mgs_disconnect"),
    (252, "mgs_exception"),
    (253, "mgs_target_reg"),
    (254, "mgs_target_del"),
    (255, "mgs_set_info"),
    (256, "mgs_config_read"),
    (400, "obd_ping"),
    (401, "llog_cancel"),
    (402, "obd_quota_callback"),
    (403, "dt_index_read"),
    (501, "llog_origin_handle_open"),
    (502, "llog_origin_handle_next_block"),
    (503, "llog_origin_handle_read_header"),
    (504, "llog_origin_handle_write_rec"),
    (505, "llog_origin_handle_close"),
    (506, "llog_origin_connect"),
    (507, "llog_catinfo"),
    (508, "llog_origin_handle_prev_block"),
    (509, "llog_origin_handle_destroy"),
    (601, "quota_acquire"),
    (602, "quota_release"),
    (700, "seq_query"),
    (801, "sec_ctx_init"),
    (802, "sec_ctx_init_cont"),
    (803, "sec_ctx_fini"),
    (900, "fld_query"),
    (901, "fld_read"),
    (1000, "out_update"),
    (1101, "lfsck_notify"),
    (1102, "lfsck_query"),
];

/// `ll_str2opcode`: the opcode of an exact table name.
pub fn opcode_of_name(name: &str) -> Option<u16> {
    LUSTRE_OPCODES
        .iter()
        .find(|(_, n)| *n == name)
        .map(|&(op, _)| op)
}

/// The wire opcode of an RPC pfsqos sends to an OST (`OST_READ` is 3, ...).
pub fn lustre_opcode(op: Opcode) -> u16 {
    match op {
        Opcode::OstRead => 3,
        Opcode::OstWrite => 4,
        Opcode::OstDestroy => 6,
        Opcode::OstPunch => 10,
        Opcode::OstLadvise => 21,
        Opcode::OstFallocate => 22,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_agrees_with_the_model() {
        for op in Opcode::ALL {
            assert_eq!(opcode_of_name(op.name()), Some(lustre_opcode(op)), "{op}");
        }
        assert_eq!(opcode_of_name("ldlm_enqueue"), Some(101));
        assert_eq!(opcode_of_name("mds_reint"), Some(36));
        assert_eq!(opcode_of_name("obd_ping"), Some(400));
        // Extra-opcode names (ll_eopcode_table) are not RPC opcodes.
        assert_eq!(opcode_of_name("read_bytes"), None);
        assert_eq!(opcode_of_name("OST_READ"), None);
        let mut names: Vec<&str> = LUSTRE_OPCODES.iter().map(|(_, n)| *n).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), LUSTRE_OPCODES.len());
    }
}
