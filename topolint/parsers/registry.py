"""Format name to parser. Each parser takes a SourceFile and returns facts or raises InputError.

Parsers are named as "module:function" so a run imports only the parsers its inputs need.
"""

from __future__ import annotations

import importlib

from topolint.inputs.sniff import NCCL_GRAPH_XML, NCCL_TOPO_XML

PARSERS = {
    NCCL_TOPO_XML: "topolint.parsers.nccl_topo_xml:parse_topology",
    NCCL_GRAPH_XML: "topolint.parsers.nccl_graph_xml:parse_graph",
    "nvidia-smi-topo": "topolint.parsers.nvidia_smi_topo:parse_matrix",
    "nvidia-smi-nvlink": "topolint.parsers.nvidia_smi_nvlink:parse_nvlink_status",
    "nvidia-smi-q": "topolint.parsers.nvidia_smi_q:parse_gpu_query",  # -q / -a: GPU identity, Fabric
    "nvidia-smi-query-csv": "topolint.parsers.nvidia_smi_q:parse_gpu_query_csv",  # --query-gpu=...,fabric.*
    # Host facts (model/host.py); "virt" and "dmi-product-name" only by a bundle manifest's format.
    "lspci": "topolint.parsers.lspci:parse_lspci",
    "dmesg": "topolint.parsers.kernel_iommu:parse_dmesg",
    "cmdline": "topolint.parsers.kernel_iommu:parse_cmdline",
    "virt": "topolint.parsers.virt:parse_detect_virt",
    "dmi-product-name": "topolint.parsers.virt:parse_dmi_product",
    "numactl": "topolint.parsers.numactl:parse_numactl",
    "hwloc": "topolint.parsers.hwloc_xml:parse_hwloc",
    # Fabric outputs (topolint/inputs/fabric_sniff.py; facts in topolint/model/fabric.py).
    "ibstat": "topolint.parsers.ibstat:parse_ibstat",
    "ibstatus": "topolint.parsers.ibstat:parse_ibstatus",
    "ibv_devinfo": "topolint.parsers.ibv_devinfo:parse_ibv_devinfo",
    "ibdev2netdev": "topolint.parsers.ibdev2netdev:parse_ibdev2netdev",
    "show_gids": "topolint.parsers.show_gids:parse_show_gids",
    "mlnx_qos": "topolint.parsers.mlnx_qos:parse_mlnx_qos",
    "sysfs-dump": "topolint.parsers.sysfs_dump:parse_sysfs_dump",
    "ethtool": "topolint.parsers.ethtool:parse_ethtool",
    "ip-addr": "topolint.parsers.ip_addr:parse_ip_addr",
    "ip-route": "topolint.parsers.ip_route:parse_ip_route",
    "mounts": "topolint.parsers.mounts:parse_mounts",
    "nccl-tests": "topolint.parsers.nccl_tests:parse_nccl_tests",
    "nccl-log": "topolint.parsers.nccl_log:parse_nccl_log",
    # Files of the cluster (topolint/inputs/cluster_sniff.py; facts in topolint/model/fabric_links.py).
    "ibnetdiscover": "topolint.parsers.ibnetdiscover:parse_ibnetdiscover",
    "iblinkinfo": "topolint.parsers.iblinkinfo:parse_iblinkinfo",
    "lldpctl": "topolint.parsers.lldpctl:parse_lldpctl",
    "topolint-inventory": "topolint.parsers.inventory_json:parse_inventory",  # docs/fleet.md
    # The scheduler's inputs (inputs/scheduler_sniff.py; facts in model/scheduler.py): cluster-wide,
    # read by the cluster stage (docs/fleet-topology.md).
    "slurm-topology-conf": "topolint.parsers.slurm_topology_conf:parse_topology_conf",
    "slurm-topology-yaml": "topolint.parsers.slurm_topology_yaml:parse_topology_yaml",
    "mpi-hostfile": "topolint.parsers.mpi_hostfile:parse_hostfile",
    "slurm-env": "topolint.parsers.slurm_env:parse_slurm_env",
    "k8s-nodes": "topolint.parsers.k8s_nodes:parse_k8s_nodes",
    # Software versions (model/software.py); "kernel-version" as uname -r only by a bundle manifest's format.
    "nvidia-driver-version": "topolint.parsers.versions:parse_nvidia_driver_version",
    "nvidia-smi-version": "topolint.parsers.versions:parse_nvidia_smi_version",
    "ofed-info": "topolint.parsers.versions:parse_ofed_info",
    "kernel-version": "topolint.parsers.versions:parse_kernel_version",
    "kernel-modules": "topolint.parsers.versions:parse_kernel_modules",
    "module-versions": "topolint.parsers.versions:parse_module_versions",
    # Config formats (infra files): see topolint/inputs/config_names.py.
    "shell": "topolint.parsers.shell:parse_shell",
    "dockerfile": "topolint.parsers.dockerfile:parse_dockerfile",
    "config-yaml": "topolint.parsers.kubernetes:parse_yaml",
    "envfile": "topolint.parsers.envfile:parse_envfile",
    "nccl-conf": "topolint.parsers.envfile:parse_nccl_conf",
    "deepspeed-env": "topolint.parsers.envfile:parse_deepspeed_env",
    "python": "topolint.parsers.python_launcher:parse_python",
    "github-actions": "topolint.parsers.github_actions:parse_workflow",
}


_MODULES: dict[str, object] = {}  # imported once; the function is looked up by name on each call


def parse(fmt: str, source):
    module_name, function = PARSERS[fmt].split(":")
    module = _MODULES.get(module_name)
    if module is None:
        module = _MODULES[module_name] = importlib.import_module(module_name)
    return getattr(module, function)(source)
