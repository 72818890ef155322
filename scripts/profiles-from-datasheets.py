#!/usr/bin/env python3
"""Writes the shipped device profiles (profiles/*.toml) from datasheet figures.

Every input below is a figure printed in the cited document; every other number in the
profiles is computed here by the arithmetic written next to it, so the derivation can be
checked and re-run (`python3 scripts/profiles-from-datasheets.py`). Nothing is fitted to a
paper's result. Units: the datasheets' MB are 10^6 bytes; profiles use MiB (2^20 bytes).
"""

import math
import os

MB_TO_MIB = 1e6 / 2**20
KIB = 1024
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "profiles")

# The stream counts of every shipped streams table (a calibration sweeps 1-128).
STREAMS = [1, 2, 4, 8, 16, 32, 64, 128]


def fmt(x):
    """A float as TOML, rounded to 0.001 (far below any datasheet's precision)."""
    r = round(x, 3)
    return repr(float(r))


def write(name, header, body):
    path = os.path.join(OUT, name + ".toml")
    with open(path, "w") as f:
        f.write(header)
        f.write(body)
    print("wrote", os.path.relpath(path))


def header(lines):
    return "".join("# " + l + "\n" if l else "#\n" for l in lines) + "\n"


def size_rows(table, rows):
    out = []
    for size_kib, bw, overhead, random in rows:
        out.append(f"[[{table}]]\nsize_kib = {size_kib}\nbandwidth_mib_s = {fmt(bw)}\n"
                   f"overhead_us = {fmt(overhead)}\n")
        if random is not None:
            out.append(f"random_penalty_us = {fmt(random)}\n")
        out.append("\n")
    return "".join(out)


def stream_rows(rows):
    return "".join(f"[[streams]]\nstreams = {n}\nswitch_penalty_us = {fmt(p)}\n\n"
                   for n, p in rows)


def source(kind, citation, date, method):
    esc = lambda s: s.replace("\\", "\\\\").replace('"', '\\"')
    return (f'[source]\nkind = "{kind}"\ncitation = "{esc(citation)}"\ndate = "{date}"\n'
            f'method = """\n{method.strip()}\n"""\n\n')


# ---------------------------------------------------------------------------------------
# 7200 rpm HDD: HGST Ultrastar 7K4000 (SAS), Hard Disk Drive Specification, rev. 1.8,
# 14 April 2016 (section 4.4: performance characteristics; 4 TB model HUS724040ALS640).
HDD_CITATION = ("HGST Ultrastar 7K4000 (SAS) Hard Disk Drive Specification, version 1.8, "
                "HGST (Western Digital), 2016-04-14, section 4.4; read on 2026-12-02: the title "
                "page and version at https://manuals.online/hgst/storage/hus724040als640/"
                "user-manual/1yeeg, the average seek (section 4.4.1.1, table 6: read and write "
                "8.2 ms typical) at https://www.easymanua.ls/hgst/hus724040als640/manual?p=25, "
                "the 7200 rpm in StorageReview's 'HGST Ultrastar 7K4000 Enterprise SAS HDD "
                "Review' at https://storagereview.com/pt/review/"
                "hgst-ultrastar-7k4000-enterprise-sas-hdd-review; the 171 MB/s sustained "
                "transfer rate not verified (no readable copy of section 4.4.3 or of the "
                "product datasheet found)")
HDD_RPM = 7200                 # spindle speed
HDD_SEEK_AVG_MS = 8.2          # average seek, read and write, typical (table 6)
# Sustained transfer rate, outer zone. Not verified: no copy of the specification's data
# transfer speed table (section 4.4.3) or of the product datasheet could be read; the value
# is kept as the profile first stated it, and the profile says so.
HDD_SUSTAINED_MB_S = 171.0
# Not in the datasheet: the drive's command overhead. The order of magnitude of a SAS
# drive's command processing, stated as an assumption.
HDD_COMMAND_OVERHEAD_US = 100.0

revolution_ms = 60_000.0 / HDD_RPM          # one revolution
rotation_ms = revolution_ms / 2             # average rotational latency: half a revolution
hdd_bw = HDD_SUSTAINED_MB_S * MB_TO_MIB
# A random request: an average seek plus half a revolution.
hdd_random_us = (HDD_SEEK_AVG_MS + rotation_ms) * 1e3


def hdd_switch_us(n, seek_avg_ms=HDD_SEEK_AVG_MS):
    """Cost of one switch between n sequential streams, with the block layer's batching.

    The elevator (mq-deadline, BFQ) dispatches the queued requests in sector order, so with
    one request queued per stream it visits the n streams in one sweep: a switch crosses
    about 1/(n+1) of the band the streams' files span (the mean gap between n uniform points
    in a sweep that returns to its start). The files are assumed spread over the whole
    stroke. Seek time grows with the square root of the distance for the short seeks of the
    acceleration-limited regime, so seek(d) = seek_avg * sqrt(3 d), which is the datasheet's
    average at the average random distance of 1/3. The rotational latency stays half a
    revolution: nothing schedules for rotation at one request per stream.
    """
    if n == 1:
        return 0.0
    d = 1.0 / (n + 1)
    return (min(seek_avg_ms, seek_avg_ms * math.sqrt(3 * d)) + rotation_ms) * 1e3


def quantile_rows(table, rows):
    return "".join(f"[[{table}]]\nquantile = {q}\nfactor = {fmt(f)}\n\n" for q, f in rows)


# The quantiles of the shipped random penalty tables.
POSITIONING_QUANTILES = [0.0, 0.01, 0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 1.0]
# Grid of the seek distance for the numerical distribution below (midpoint rule).
SEEK_GRID = 4000


def positioning_factors(seek_avg_ms, revolution_ms, quantiles):
    """Inverse distribution function of one random request's positioning over its mean.

    Positioning = seek + rotational latency. The rotational latency is uniform over one
    revolution (the target sector is anywhere on the track when the seek ends). The seek
    distance d (a fraction of the stroke) between two independent uniform positions has the
    density 2 (1 - d); the seek time grows with the square root of the distance (as in
    `hdd_switch_us`), scaled so that its mean over random seeks is the datasheet's average
    seek: seek(d) = seek_avg * sqrt(d) / E[sqrt(d)], E[sqrt(d)] = 8/15. The distribution is
    computed on a grid of distances (no random sampling: the same file every run) and
    inverted by bisection.
    """
    c = seek_avg_ms * 15.0 / 8.0
    seeks = []
    for i in range(SEEK_GRID):
        d = (i + 0.5) / SEEK_GRID
        seeks.append((c * math.sqrt(d), 2.0 * (1.0 - d) / SEEK_GRID))
    total = sum(w for _, w in seeks)

    def cdf(x):
        return sum(w * min(1.0, max(0.0, (x - s) / revolution_ms)) for s, w in seeks) / total

    lo_all, hi_all = 0.0, c + revolution_ms
    mean = sum(w * (s + revolution_ms / 2) for s, w in seeks) / total
    out = []
    for q in quantiles:
        if q == 0.0:
            x = min(s for s, _ in seeks)
        elif q == 1.0:
            x = max(s for s, _ in seeks) + revolution_ms
        else:
            lo, hi = lo_all, hi_all
            for _ in range(60):
                mid = (lo + hi) / 2
                if cdf(mid) < q:
                    lo = mid
                else:
                    hi = mid
            x = hi
        out.append((q, x / mean))
    return out, mean


hdd_positioning, hdd_positioning_mean_ms = positioning_factors(
    HDD_SEEK_AVG_MS, revolution_ms, POSITIONING_QUANTILES)

HDD_METHOD = f"""
Datasheet figures: {HDD_RPM} rpm, {HDD_SEEK_AVG_MS} ms average seek (read and write, typical),
{HDD_SUSTAINED_MB_S} MB/s sustained transfer rate. Bandwidth of every row: the sustained rate
in MiB/s. Overhead: {HDD_COMMAND_OVERHEAD_US} us of command processing, an assumption (the
datasheet gives none). Random penalty: average seek plus half a revolution
({rotation_ms:.3f} ms). Streams: a switch between n sequential streams costs the seek across
1/(n+1) of the stroke (seek time proportional to the square root of the distance, equal to the
average seek at 1/3 of the stroke) plus half a revolution: the block layer's elevator
dispatches the queued requests in sector order, visiting the streams in one sweep. One
request at a time (no command queueing on a single spindle without rotational scheduling).
No write cache: writes pay the same positioning as reads. Random penalty variability (every
random penalty is scaled by a factor drawn from it; a switch keeps its mean, its seek distance
fixed by the sweep): the rotational latency is
uniform over one revolution ({revolution_ms:.3f} ms, from the rpm), the seek time grows with
the square root of the distance between two uniform positions, its mean the average seek; the
table is that sum's inverse distribution function over its mean ({hdd_positioning_mean_ms:.3f}
ms), computed on a grid. No whole-service variability table: the command overhead and the
media transfer are taken as constant. The sustained transfer rate is not verified: no readable
copy of the specification's data transfer table (section 4.4.3) or of the product datasheet
was found; the seek and the rpm are. Computed by scripts/profiles-from-datasheets.py.
"""

write("hdd-7200rpm", header([
    "A 7200 rpm enterprise HDD (HGST Ultrastar 7K4000, 4 TB, SAS), from its datasheet.",
    "Generated by scripts/profiles-from-datasheets.py; edit the script, not this file.",
]), (
    'format = "pfsqos-device-profile/1"\nname = "hdd-7200rpm"\n'
    'description = "One 7200 rpm HDD: datasheet seek, rotation and transfer rate; elevator '
    'batching of concurrent streams."\n'
    f"concurrency = 1\nrandom_penalty_us = {fmt(hdd_random_us)}\n"
    "direction_switch_penalty_us = 0.0\n\n"
    + source("datasheet", HDD_CITATION, "2016-04-14", HDD_METHOD)
    + size_rows("read", [(4, hdd_bw, HDD_COMMAND_OVERHEAD_US, None),
                         (16 * KIB, hdd_bw, HDD_COMMAND_OVERHEAD_US, None)])
    + size_rows("write", [(4, hdd_bw, HDD_COMMAND_OVERHEAD_US, None),
                          (16 * KIB, hdd_bw, HDD_COMMAND_OVERHEAD_US, None)])
    + stream_rows([(n, hdd_switch_us(n)) for n in STREAMS])
    + quantile_rows("random_penalty_variability", hdd_positioning)
))

# ---------------------------------------------------------------------------------------
# RAID-6 OST of ten of those drives (8 data + 2 parity), 128 KiB chunks: a 1 MiB stripe,
# the Lustre RPC size. Derived from the HDD above by RAID-6 arithmetic.
R6_DATA, R6_PARITY, R6_CHUNK_KIB = 8, 2, 128
r6_disks = R6_DATA + R6_PARITY
r6_stripe_kib = R6_DATA * R6_CHUNK_KIB
r6_bw = R6_DATA * hdd_bw                  # full-stripe streaming: the data disks in parallel
# A small random write is a read-modify-write of one data chunk and both parity chunks:
# each of the three disks seeks (average seek + half a revolution), reads, and writes back
# one revolution later.
r6_rmw_disk_ms = HDD_SEEK_AVG_MS + rotation_ms + revolution_ms
# The model has one concurrency for the array (its ten spindles); a small write holds three
# of them, which the model shows as a service time three times the disks' busy time spread
# over the ten slots: (3 x busy) per write over 10 slots = 10 / (3 x busy) writes per second.
r6_small_write_us = r6_rmw_disk_ms * 1e3 * 3
R6_METHOD = f"""
Derived from the hdd-7200rpm profile (HGST Ultrastar 7K4000 datasheet) by RAID-6 arithmetic:
{R6_DATA}+{R6_PARITY} disks, {R6_CHUNK_KIB} KiB chunks ({r6_stripe_kib} KiB stripe, the Lustre
1 MiB RPC). Streaming bandwidth: {R6_DATA} data disks x {hdd_bw:.3f} MiB/s. Concurrency: the
{r6_disks} spindles. Random penalty: the disks' average seek plus half a revolution (all disks
of a stripe move together). Small writes (below a chunk) are read-modify-writes of one data
and two parity chunks: three disks each busy for a seek, half a revolution and one more
revolution ({r6_rmw_disk_ms:.3f} ms), shown as a random penalty of three times that at 4 KiB
(three of the ten slots' worth of time). Sequential small writes are assumed coalesced into
full stripes by the array's stripe cache. Streams: as the HDD (every switch moves all heads).
No random penalty variability: a stripe's positioning is the slowest of the disks it involves,
whose distribution this arithmetic does not derive. Computed by
scripts/profiles-from-datasheets.py.
"""
write("raid6-hdd-ost", header([
    "A RAID-6 (8+2) OST of 7200 rpm HDDs, derived from the HDD datasheet by RAID arithmetic.",
    "Generated by scripts/profiles-from-datasheets.py; edit the script, not this file.",
]), (
    'format = "pfsqos-device-profile/1"\nname = "raid6-hdd-ost"\n'
    'description = "RAID-6 8+2 of 7200 rpm HDDs, 1 MiB stripe: the typical HDD OST."\n'
    f"concurrency = {r6_disks}\nrandom_penalty_us = {fmt(hdd_random_us)}\n"
    "direction_switch_penalty_us = 0.0\n\n"
    + source("derived", HDD_CITATION + "; RAID-6 arithmetic", "2016-04-14", R6_METHOD)
    + size_rows("read", [(4, r6_bw, HDD_COMMAND_OVERHEAD_US, None),
                         (16 * KIB, r6_bw, HDD_COMMAND_OVERHEAD_US, None)])
    + size_rows("write", [(4, r6_bw, HDD_COMMAND_OVERHEAD_US, r6_small_write_us),
                          (R6_CHUNK_KIB, r6_bw, HDD_COMMAND_OVERHEAD_US, r6_small_write_us),
                          (r6_stripe_kib, r6_bw, HDD_COMMAND_OVERHEAD_US, None),
                          (16 * KIB, r6_bw, HDD_COMMAND_OVERHEAD_US, None)])
    + stream_rows([(n, hdd_switch_us(n)) for n in STREAMS])
))


# ---------------------------------------------------------------------------------------
def ssd(name, description, citation, date, seq_read_mb_s, seq_write_mb_s, rand_read_iops,
        rand_write_iops, lat_read_us, lat_write_us, extra):
    """A flash SSD from its datasheet's four throughputs and two latencies.

    4 KiB rows: the serialized transfer is what caps random IOPS, so its bandwidth is
    IOPS x 4 KiB, and the overhead is what the datasheet's queue-depth-1 latency adds to it.
    Large rows (128 KiB, the size of the datasheet's sequential figures, and above): the
    sequential rates, with the same command overhead. Concurrency: Little's law, the
    requests that must overlap to reach the random-read IOPS at the one-request latency.
    No random penalty: flash has no positioning; the datasheet's random and sequential
    figures differ only by request size.
    """
    r4_bw = rand_read_iops * 4 * KIB / 2**20
    w4_bw = rand_write_iops * 4 * KIB / 2**20
    r_xfer = 4 * KIB / (r4_bw * 2**20) * 1e6
    w_xfer = 4 * KIB / (w4_bw * 2**20) * 1e6
    r_over = max(0.0, lat_read_us - r_xfer)
    w_over = max(0.0, lat_write_us - w_xfer)
    conc = math.ceil(rand_read_iops * lat_read_us * 1e-6)
    seq_r = seq_read_mb_s * MB_TO_MIB
    seq_w = seq_write_mb_s * MB_TO_MIB
    method = f"""
Datasheet figures: sequential read {seq_read_mb_s} MB/s and write {seq_write_mb_s} MB/s
(128 KiB), random 4 KiB read {rand_read_iops} and write {rand_write_iops} IOPS (queue depth
32), latency read {lat_read_us} us and write {lat_write_us} us (4 KiB, queue depth 1).
4 KiB rows: bandwidth = IOPS x 4 KiB (the serialized transfer caps random IOPS), overhead =
latency - 4 KiB / bandwidth. 128 KiB and larger: the sequential rates, the same overheads.
Concurrency: ceil(random read IOPS x read latency) = {conc} (Little's law). No random
penalty, no stream cost (flash has no positioning) and no congestion. No variability table:
the specification's quality-of-service latencies (99 % and 99.99 % of 4 KiB requests) would
give its tail, but no readable copy of the specification was found: none of the figures above
is verified against it, and the device is left without variability.{extra} Computed by
scripts/profiles-from-datasheets.py.
"""
    write(name, header([
        description + ", from its datasheet.",
        "Generated by scripts/profiles-from-datasheets.py; edit the script, not this file.",
    ]), (
        f'format = "pfsqos-device-profile/1"\nname = "{name}"\n'
        f'description = "{description}."\n'
        f"concurrency = {conc}\nrandom_penalty_us = 0.0\ndirection_switch_penalty_us = 0.0\n\n"
        + source("datasheet", citation, date, method)
        + size_rows("read", [(4, r4_bw, r_over, None), (128, seq_r, r_over, None)])
        + size_rows("write", [(4, w4_bw, w_over, None), (128, seq_w, w_over, None)])
    ))


ssd("ssd-sata", "A 960 GB datacenter SATA SSD (Intel SSD D3-S4510)",
    "Intel SSD D3-S4510 Series (960 GB, 2.5 in SATA 6 Gb/s) product specification, "
    "Intel, 2018; not verified: searched for on 2026-12-02, no readable copy found (only "
    "the specification of the earlier DC S4500/S4600, a different drive)", "2018",
    seq_read_mb_s=560, seq_write_mb_s=510, rand_read_iops=95_000, rand_write_iops=36_000,
    lat_read_us=36, lat_write_us=37, extra="")

ssd("ssd-nvme", "A 2 TB datacenter NVMe SSD (Intel SSD DC P4510)",
    "Intel SSD DC P4510 Series (2 TB, U.2 PCIe 3.1 x4 NVMe) product specification, "
    "Intel, 2018; not verified: searched for on 2026-12-02, no readable copy found (only "
    "a product guide of the earlier DC P4500, a different drive)", "2018",
    seq_read_mb_s=3200, seq_write_mb_s=2000, rand_read_iops=637_000, rand_write_iops=81_500,
    lat_read_us=77, lat_write_us=18, extra="")
