"""NCCL ring graph XML for one rank: each channel receives on the previous-facing port and
sends on the next-facing port, alternating the PCIe root per channel (kindling's fabric_ring,
used on the four-node ring of docs/field-notes.md#nccl-ring-graph).

NCCL names net devices by number. The numbers here are positions in the node's NCCL_IB_HCA
list; NCCL_DEBUG=INFO prints its own numbering (`NET/IB : Using [0]…`) to check they agree.
The file carries no comment: NCCL reads it with its own small XML parser.
"""

from __future__ import annotations

from sparkrig import defaults


def ring_graph_xml(
    hcas: list[str],
    prev_devices: list[str],
    next_devices: list[str],
    channels: int = defaults.FABRIC_NCCL_GRAPH_CHANNELS,
) -> str:
    """`prev_devices` / `next_devices`: RDMA devices of the ports facing the previous and the
    next rank, root A first; `hcas`: the node's NCCL_IB_HCA list in order."""
    lines = [
        '<graphs version="1">',
        f'  <graph id="0" pattern="4" crossnic="1" nchannels="{channels}" speedintra="0.24" '
        'speedinter="0.24" latencyinter="0" typeintra="LOC" typeinter="P2C" samechannels="1">',
    ]
    for channel in range(channels):
        receive = hcas.index(prev_devices[channel % len(prev_devices)])
        send = hcas.index(next_devices[channel % len(next_devices)])
        lines.append(
            f'    <channel><net dev="{receive}"/><gpu dev="0"/><net dev="{send}"/></channel>'
        )
    lines += ["  </graph>", "</graphs>", ""]
    return "\n".join(lines)
