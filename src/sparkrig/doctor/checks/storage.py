"""Where the weights and the JIT caches live: filesystem, drive, free space, NVMe power saving."""

from __future__ import annotations

from sparkrig import defaults
from sparkrig.doctor.model import NodeCapture
from sparkrig.doctor.parse import first_filesystem, lsblk_devices, sysfs_values
from sparkrig.doctor.registry import Hit, NodeContext, node_check
from sparkrig.outside_numbers import parse_int

NOTES = "docs/field-notes.md"
NETWORK_FILESYSTEMS = (
    "nfs",
    "nfs4",
    "cifs",
    "smb3",
    "fuse.sshfs",
    "9p",
    "glusterfs",
    "ceph",
    "fuse.s3fs",
    "lustre",
)


@node_check(
    "model-network-fs",
    summary="the model directory is not on a network filesystem",
    why="weights on NFS are fine for loading; only a model that reads tables from disk on every "
    "decode step (DeepSeek-V4.1's Engram) is slowed on every step — the check cannot tell which "
    "model will run, so it can only warn",
    source=f"{NOTES} (weights on a slow filesystem)",
    needs=("findmnt_model",),
)
def model_network_fs(capture: NodeCapture, context: NodeContext) -> list[Hit]:
    system = first_filesystem(capture.text("findmnt_model") or "")
    if system.get("fstype") not in NETWORK_FILESYSTEMS:
        return []
    return [
        Hit(
            "warning",
            f"{context.model_dir or 'the model directory'} is on {system.get('source')} "
            f"({system.get('fstype')}, mounted at {system.get('target')}): fine for loading, slow "
            "for a model that reads from disk on every decode step (Engram tables)",
            "for such a model copy it to a local NVMe drive on every node and point [model] path "
            "there; other models may stay on NFS (keep the JIT caches node-local)",
        )
    ]


def _disk_of(source: str, devices: list[dict[str, object]]) -> list[dict[str, object]]:
    """The partition and the disk above it, by kernel name."""
    name = source.removeprefix("/dev/")
    chain = []
    while name:
        device = next((d for d in devices if d.get("name") == name), None)
        if device is None:
            break
        chain.append(device)
        name = str(device.get("pkname") or "")
    return chain


@node_check(
    "model-slow-disk",
    summary="the model directory is on a local, non-USB, solid-state drive",
    why="Engram and weights read from a USB disk or a rotating drive slow decode directly",
    source=f"{NOTES} (weights on a slow filesystem)",
    needs=("findmnt_model", "lsblk"),
)
def model_slow_disk(capture: NodeCapture, context: NodeContext) -> list[Hit]:
    system = first_filesystem(capture.text("findmnt_model") or "")
    chain = _disk_of(str(system.get("source") or ""), lsblk_devices(capture.text("lsblk") or ""))
    hits = []
    where = f"{context.model_dir or 'the model directory'} ({system.get('source')})"
    if any(d.get("tran") == "usb" for d in chain):
        hits.append(
            Hit(
                "warning",
                f"{where} is on a USB disk",
                "copy the model to the internal NVMe drive and point [model] path there",
            )
        )
    elif any(d.get("rota") in (True, "1") for d in chain):
        hits.append(
            Hit(
                "warning",
                f"{where} is on a drive that reports rotational (rota=1)",
                "copy the model to an NVMe drive; a virtual disk may misreport rota, "
                "check `lsblk -o NAME,ROTA,TRAN,MODEL`",
            )
        )
    return hits


@node_check(
    "jit-cache-shared",
    summary="the JIT cache directory is on node-local disk",
    why="ranks compiling into one shared JIT tree corrupted each other's cubins (seven caches, "
    "three different crashes)",
    source=f"{NOTES} (JIT caches)",
    needs=("findmnt_jit",),
)
def jit_cache_shared(capture: NodeCapture, context: NodeContext) -> list[Hit]:
    system = first_filesystem(capture.text("findmnt_jit") or "")
    if system.get("fstype") not in NETWORK_FILESYSTEMS:
        return []
    return [
        Hit(
            "error",
            f"JIT cache {context.jit_dir} is on {system.get('source')} ({system.get('fstype')})",
            "set engine.jit_cache_dir to a local path (default "
            f"{defaults.LAUNCH_JIT_CACHE_DIR}) and "
            "delete the shared cache once",
        )
    ]


@node_check(
    "jit-cache-free",
    summary="the JIT cache filesystem has room for a cold boot",
    why="a cold boot compiles every kernel into the JIT caches; a full disk fails it midway on "
    "one rank, which then stalls the others",
    source=f"{NOTES} (JIT caches)",
    needs=("findmnt_jit",),
)
def jit_cache_free(capture: NodeCapture, context: NodeContext) -> list[Hit]:
    system = first_filesystem(capture.text("findmnt_jit") or "")
    avail = system.get("avail")
    if not isinstance(avail, int) or avail >= defaults.DOCTOR_JIT_MIN_FREE_BYTES:
        return []
    return [
        Hit(
            "warning",
            f"{avail / 1024**3:.1f} GiB free on {system.get('target')} (JIT cache "
            f"{context.jit_dir}); wants {defaults.DOCTOR_JIT_MIN_FREE_BYTES / 1024**3:.0f} GiB",
            f"free space on {system.get('target')} (`du -sh {context.jit_dir}/*` lists the "
            "caches), "
            "or move engine.jit_cache_dir to a larger local disk",
        )
    ]


_PARAMS = "/sys/module/nvme_core/parameters/"


@node_check(
    "nvme-apst",
    summary="NVMe power saving waits long enough before sleeping",
    why="with the kernel's APST defaults the drive sleeps 100 ms after its last read and takes "
    "11-46 ms to wake; Engram reads on the decode path found it asleep (3% of 8-stream "
    "throughput)",
    source=f"{NOTES} (NVMe power states)",
    needs=("module_sysfs",),
)
def nvme_apst(capture: NodeCapture, context: NodeContext) -> list[Hit]:
    values = sysfs_values(capture.text("module_sysfs") or "")
    drives = [p for p in values if p.startswith("/sys/class/nvme/") and p.endswith("/transport")]
    if not drives or values.get(_PARAMS + "default_ps_max_latency_us") == "0":
        return []  # no NVMe drive, or APST off entirely
    primary = values.get(_PARAMS + "apst_primary_timeout_ms")
    secondary = values.get(_PARAMS + "apst_secondary_timeout_ms")
    if primary is None or secondary is None:
        return []  # a kernel older than these parameters
    source = "nvme module parameters"
    primary_ms = parse_int(primary, source=source, field="apst_primary_timeout_ms", minimum=0)
    secondary_ms = parse_int(secondary, source=source, field="apst_secondary_timeout_ms", minimum=0)
    if primary_ms >= defaults.DOCTOR_APST_PRIMARY_MIN_MS and secondary_ms >= (
        defaults.DOCTOR_APST_SECONDARY_MIN_MS
    ):
        return []
    return [
        Hit(
            "warning",
            f"nvme_core apst_primary_timeout_ms={primary}, "
            f"apst_secondary_timeout_ms={secondary} ({len(drives)} NVMe drive(s))",
            f"add `nvme_core.apst_primary_timeout_ms={defaults.DOCTOR_APST_PRIMARY_MIN_MS} "
            f"nvme_core.apst_secondary_timeout_ms={defaults.DOCTOR_APST_SECONDARY_MIN_MS}` to the "
            "kernel command line (GRUB_CMDLINE_LINUX in /etc/default/grub, `update-grub`) and "
            "reboot",
        )
    ]
