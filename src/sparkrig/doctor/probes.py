"""The raw commands doctor runs on each node, once. Each names the tool it needs and how to
install it, so a node without the tool gets one `skipped` line instead of an error.

Globs and sysfs reads go through `sh -c` with `grep -s -H .`: one `path:value` line per file,
unreadable files (a down link's `speed` answers EINVAL) silently left out. The same text
format serves this machine, a network namespace (`ip netns exec` remounts /sys) and ssh.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sparkrig import defaults
from sparkrig.engines.vllm.think_tokens import ALL_TOKENS


@dataclass(frozen=True)
class Probe:
    name: str
    argv: list[str]
    tool: str
    install: str = field(default="")
    """how to get the tool, for the skipped line"""


_NET_SYSFS = (
    "grep -s -H . /sys/class/net/*/speed /sys/class/net/*/mtu /sys/class/net/*/operstate "
    "/proc/sys/net/ipv4/ip_forward /proc/sys/net/ipv4/conf/*/rp_filter; true"
)
_IB_SYSFS = (
    "grep -s -r -H . /sys/class/infiniband/*/ports/*/state /sys/class/infiniband/*/ports/*/gids "
    "/sys/class/infiniband/*/ports/*/gid_attrs /sys/class/infiniband/*/ports/*/counters "
    "/sys/class/infiniband/*/ports/*/hw_counters; true"
)
_MODULE_SYSFS = (
    "grep -s -H . /sys/module/nvidia/version /sys/module/nvme_core/parameters/* "
    "/sys/class/nvme/*/model /sys/class/nvme/*/transport; true"
)
# findmnt -T needs a path that exists: walk up to the nearest existing parent first
_FINDMNT = (
    'p="$1"; case "$p" in "~"*) p="$HOME${p#"~"}";; esac; '
    'while [ ! -e "$p" ]; do p=$(dirname "$p"); done; '
    'exec findmnt -J -b -o TARGET,SOURCE,FSTYPE,OPTIONS,AVAIL,SIZE -T "$p"'
)


# which of the given tokens the model's tokenizer.json holds, as quoted JSON strings (a vocabulary
# key or an added token's content); a folder without tokenizer.json says so and judges nothing
_MODEL_VOCAB = (
    'd="$1"; shift; case "$d" in "~"*) d="$HOME${d#"~"}";; esac; f="$d/tokenizer.json"; '
    '[ -f "$f" ] || { echo "no-tokenizer-json $f"; exit 0; }; '
    'for t in "$@"; do if grep -q -F "\\"$t\\"" "$f"; then echo "has $t"; '
    'else echo "lacks $t"; fi; done'
)


# who serves, whether logind lingers for them, and every RemoveIPC= logind reads (last wins)
_LOGIND = (
    'u=$(id -un); echo "user $u $(id -u)"; '
    '[ -e "/var/lib/systemd/linger/$u" ] && echo "linger yes" || echo "linger no"; '
    "grep -h -s '^[[:space:]]*RemoveIPC=' /usr/lib/systemd/logind.conf.d/*.conf "
    "/etc/systemd/logind.conf /etc/systemd/logind.conf.d/*.conf | tr -d ' \t'; true"
)
# the source address of this node's IPv4 route to $1 (vLLM's get_ip() without VLLM_HOST_IP), with
# ip's own error and exit status on stdout: a node with no such route is a finding, not a skip
_ROUTE_GET = (
    'command -v ip >/dev/null || exit 127; ip -j -4 route get "$1" 2>&1; echo "sparkrig-exit $?"'
)
# what RDMA needs of the user: the locked-memory limit and the devices it can open
_RDMA_LIMITS = (
    'echo "memlock $(ulimit -l)"; echo "devices $(ls /dev/infiniband 2>/dev/null | tr "\n" " ")"'
)


# the Python packages of the environment the engine runs from (a venv beside its binary)
_ENGINE_PYTHON = (
    'b=$(command -v "$1") || exit 127; d=$(dirname "$b"); '
    'for py in "$d/python" "$d/python3"; do [ -x "$py" ] && exec "$py" -m pip list '
    "--format=freeze; done; exit 127"
)


# the runtime's own answer and exit status on stdout, so a daemon that does not answer (or a
# runtime not installed: the shell's exit 127) is a finding, not a skipped probe
_CONTAINER_INFO = '"$1" info --format json; rc=$?; echo; echo "sparkrig-exit $rc"'
# what GPUs in a container need: nvidia-ctk (docker's toolkit) and CDI specs naming nvidia.com/gpu
_CONTAINER_GPU = (
    'echo "nvidia-ctk $(command -v nvidia-ctk)"; '
    "grep -l -s nvidia.com/gpu /etc/cdi/*.yaml /etc/cdi/*.json /var/run/cdi/*.yaml "
    "/var/run/cdi/*.json | sed 's/^/cdi /'; true"
)


def container_probes(runtime: str) -> list[Probe]:
    """Only for a cluster file whose engine.container.runtime is docker or podman."""
    return [
        Probe("container_info", ["sh", "-c", _CONTAINER_INFO, "sh", runtime], "sh", "dash"),
        Probe("container_gpu", ["sh", "-c", _CONTAINER_GPU], "sh", "dash"),
    ]


# the engine's Python packages inside the image: the python beside the engine command, else
# python3 or python on PATH; importlib.metadata, not pip (images built with uv hold no pip)
_IMAGE_PYTHON = (
    'b=$(command -v "$1") && d=${b%/*} || d=/nonexistent; '
    'for py in "$d/python" "$d/python3" "$(command -v python3)" "$(command -v python)"; do '
    '[ -n "$py" ] && [ -x "$py" ] && exec "$py" -c "$2"; done; exit 127'
)
_LIST_DISTRIBUTIONS = (
    "import importlib.metadata as m\n"
    "for d in sorted(m.distributions(), key=lambda d: (d.metadata['Name'] or '').lower()):\n"
    "    print(f\"{d.metadata['Name']}=={d.version}\")"
)


def image_python_probe(runtime: str, runtime_args: list[str], image: str, binary: str) -> Probe:
    """The same package listing as `engine_python`, run in a throwaway container of the engine
    image: never pulled (a node without the image is a skip naming it), no network, no GPU."""
    argv = [runtime, *runtime_args, "run", "--rm", "--pull", "never", "--network", "none"]
    argv += ["--entrypoint", "sh", image, "-c", _IMAGE_PYTHON, "sh", binary, _LIST_DISTRIBUTIONS]
    return Probe(
        "image_python",
        argv,
        f"sh or python in the image {image}",
        "build the image with its engine's python (doctor lists the image's torch and NCCL "
        "builds with it), then `sparkrig sync`",
    )


def container_store_probe(store_root: str) -> Probe:
    """The filesystem under the runtime's image store (from its `info`)."""
    return Probe(
        "findmnt_container_store",
        ["sh", "-c", _FINDMNT, "sh", store_root],
        "findmnt",
        "apt install util-linux",
    )


# the node's Python for sparkrig's own steps there (discover's probe, fabric test's workers):
# whether it exists and which sparkrig and torch it has, read from their metadata (no import)
_SPARKRIG_PYTHON = (
    'command -v "$1" >/dev/null 2>&1 || { printf \'{"missing": true, "path": "%s"}\\n\' "$1"; '
    'exit 0; }; exec "$1" -c "$2" "$1"'
)
_SPARKRIG_STACK = (
    "import json, sys\n"
    "from importlib.metadata import PackageNotFoundError, version\n"
    "def named(name):\n"
    "    try:\n        return version(name)\n"
    "    except PackageNotFoundError:\n        return None\n"
    "print(json.dumps({'path': sys.argv[1], 'python': sys.version.split()[0], "
    "'sparkrig': named('sparkrig'), 'torch': named('torch')}))\n"
)


def sparkrig_python_probe(python: str) -> Probe:
    """`{"python": …, "sparkrig": …, "torch": …}` of the Python sparkrig's steps run on the
    node (`{"missing": true}` where it is not there)."""
    return Probe(
        "sparkrig_python",
        ["sh", "-c", _SPARKRIG_PYTHON, "sh", python, _SPARKRIG_STACK],
        "sh",
        "dash",
    )


def engine_python_probe(binary: str) -> Probe:
    return Probe(
        "engine_python",
        ["sh", "-c", _ENGINE_PYTHON, "sh", binary],
        binary,
        f"install {binary} on the node (in a venv with pip)",
    )


def node_probes(model_dir: str, jit_dir: str, engine_version: list[str] | None) -> list[Probe]:
    """Every probe for one node, in the order they run (cheap and certain first, so an
    unreachable node is found on the first)."""
    probes = [
        Probe("uname", ["uname", "-r"], "uname", "coreutils"),
        Probe("pagesize", ["getconf", "PAGESIZE"], "getconf", "libc-bin"),
        Probe("clock", ["date", "+%s.%N"], "date", "coreutils"),
        Probe("ip_addr", ["ip", "-j", "address", "show"], "ip", "apt install iproute2"),
        Probe("ip_route", ["ip", "-j", "-4", "route", "show"], "ip", "apt install iproute2"),
        Probe("ip_link", ["ip", "-j", "-s", "link", "show"], "ip", "apt install iproute2"),
        Probe("net_sysfs", ["sh", "-c", _NET_SYSFS], "sh", "dash"),
        Probe("ib_sysfs", ["sh", "-c", _IB_SYSFS], "sh", "dash"),
        Probe("module_sysfs", ["sh", "-c", _MODULE_SYSFS], "sh", "dash"),
        Probe("ibv_devinfo", ["ibv_devinfo"], "ibv_devinfo", "apt install ibverbs-utils"),
        Probe(
            "nvidia_smi",
            ["nvidia-smi", "-q", "-x"],
            "nvidia-smi",
            "install the NVIDIA driver utilities (nvidia-utils-<branch>)",
        ),
        Probe(
            "dpkg",
            ["dpkg-query", "-W", "-f", "${Package}\\t${Version}\\t${db:Status-Abbrev}\\n"],
            "dpkg-query",
            "a Debian or Ubuntu host",
        ),
        Probe("meminfo", ["cat", "/proc/meminfo"], "cat", "coreutils"),
        Probe(
            "vmstat",
            ["vmstat", "1", str(defaults.DOCTOR_VMSTAT_SAMPLES)],
            "vmstat",
            "apt install procps",
        ),
        Probe(
            "findmnt_model",
            ["sh", "-c", _FINDMNT, "sh", model_dir],
            "findmnt",
            "apt install util-linux",
        ),
        Probe(
            "findmnt_jit",
            ["sh", "-c", _FINDMNT, "sh", jit_dir],
            "findmnt",
            "apt install util-linux",
        ),
        Probe(
            "lsblk",
            ["lsblk", "-J", "-o", "NAME,PKNAME,TRAN,ROTA,TYPE,MOUNTPOINT"],
            "lsblk",
            "apt install util-linux",
        ),
        Probe("chronyc", ["chronyc", "-n", "tracking"], "chronyc", "apt install chrony"),
        Probe("dmesg", ["dmesg"], "dmesg", "apt install util-linux (and run doctor as root)"),
        Probe("logind", ["sh", "-c", _LOGIND], "sh", "dash"),
        Probe("rdma_limits", ["sh", "-c", _RDMA_LIMITS], "sh", "dash"),
        Probe(
            "route_get",
            ["sh", "-c", _ROUTE_GET, "sh", defaults.DOCTOR_VLLM_GET_IP_TARGET],
            "ip",
            "apt install iproute2",
        ),
        Probe(
            "systemd_units",
            [
                "systemctl",
                "list-units",
                "--type=service",
                "--all",
                "--plain",
                "--no-legend",
                "--no-pager",
            ],
            "systemctl",
            "a systemd host",
        ),
    ]
    if engine_version:
        probes.append(
            Probe("engine_version", engine_version, engine_version[0], "install the engine")
        )
    if model_dir:
        argv = ["sh", "-c", _MODEL_VOCAB, "sh", model_dir, *ALL_TOKENS]
        probes.append(Probe("model_vocab", argv, "grep", "apt install grep"))
    return probes


# each file the node's ranks read: `sha256 HEX PATH`, or `missing`, `folder` (docker makes one
# where a `-v` bind source is missing) or `unreadable` before the path
_NODE_FILES = (
    'for p in "$@"; do if [ -d "$p" ]; then echo "folder $p"; '
    'elif [ ! -e "$p" ]; then echo "missing $p"; elif [ ! -r "$p" ]; then echo "unreadable $p"; '
    'else echo "sha256 $(sha256sum < "$p" | cut -d" " -f1) $p"; fi; done'
)


def node_files_probe(paths: list[str]) -> Probe:
    """Only for a node whose plan has files its ranks read (the NCCL graph XML)."""
    return Probe("node_files", ["sh", "-c", _NODE_FILES, "sh", *paths], "sh", "dash")


def ethtool_probe(netdev: str) -> Probe:
    return Probe(f"ethtool:{netdev}", ["ethtool", netdev], "ethtool", "apt install ethtool")


def unit_show_probe(units: list[str]) -> Probe:
    return Probe(
        "systemd_show",
        [
            "systemctl",
            "show",
            "-p",
            "Id,Restart,RestartUSec,ActiveState,UnitFileState,ExecStart",
            *units,
        ],
        "systemctl",
        "a systemd host",
    )
