//! Linux adapters of the PI bandwidth controller (Collignon, Cerf, Robu et al.,
//! Section 3): the sensor is the mean dispatch-queue length of the storage server's disk,
//! from `/sys/block/<dev>/stat` ([`block`]); the actuator is an egress bandwidth limit on the
//! client's interface, a token bucket filter set with `tc` ([`tc`]). [`netns`] makes the
//! network namespace and veth pair the actuator is tested on. [`procfs`] reads `/proc` texts
//! (bounded) for the daemons that report load.
//!
//! Linux only (sysfs, iproute2). std only: tc and ip run as child processes, sysfs is read as
//! files.

pub mod block;
pub mod netns;
pub mod procfs;
pub mod tc;

pub use block::{
    block_device_of_devnum, block_device_of_dir, mean_queue_len, BlockDevice, BlockDeviceError,
    BlockSensor, BlockStat, BlockStatError, QueueLenError, QueueSample, SensorError, SYSFS_ROOT,
};
pub use tc::{
    default_burst_bytes, parse_root_qdisc, parse_tbf_show, IfName, RootQdisc, TbfShow, TcActuator,
    TcError, TcTbf,
};
