//! The roles driven together on virtual time, one binary: each module is one area.

mod dsfq_sync_on_virtual_time;
mod oss_and_client_on_virtual_time;
