"""What the Pod Security Standards allow, as data: the capabilities, sysctls, SELinux types, volume sources
and AppArmor and seccomp profiles each level lets a pod use (kubernetes/pod-security-admission,
`policy/check_*.go`). `podsecurity` checks pods against these lists; they change with the standard's
version, the checks seldom do.
"""

from __future__ import annotations

#: What a container runtime grants by default; baseline allows adding only these back.
DEFAULT_CAPABILITIES = frozenset(
    {
        "AUDIT_WRITE",
        "CHOWN",
        "DAC_OVERRIDE",
        "FOWNER",
        "FSETID",
        "KILL",
        "MKNOD",
        "NET_BIND_SERVICE",
        "SETFCAP",
        "SETGID",
        "SETPCAP",
        "SETUID",
        "SYS_CHROOT",
    }
)
#: The one capability restricted lets a container add (after dropping ALL).
RESTRICTED_ADDABLE_CAPABILITIES = frozenset({"NET_BIND_SERVICE"})
#: Namespaced sysctls that cannot reach other pods (baseline's allowed list, as of v1.32).
SAFE_SYSCTLS = frozenset(
    {
        "kernel.shm_rmid_forced",
        "net.ipv4.ip_local_port_range",
        "net.ipv4.ip_unprivileged_port_start",
        "net.ipv4.tcp_syncookies",
        "net.ipv4.ping_group_range",
        "net.ipv4.ip_local_reserved_ports",
        "net.ipv4.tcp_keepalive_time",
        "net.ipv4.tcp_fin_timeout",
        "net.ipv4.tcp_keepalive_intvl",
        "net.ipv4.tcp_keepalive_probes",
        "net.ipv4.tcp_rmem",
        "net.ipv4.tcp_wmem",
    }
)
SELINUX_TYPES = frozenset({"", "container_t", "container_init_t", "container_kvm_t", "container_engine_t"})
#: Volume sources restricted allows: the ones whose data comes from the API or a PersistentVolume.
RESTRICTED_VOLUME_SOURCES = frozenset(
    {
        "configMap",
        "csi",
        "downwardAPI",
        "emptyDir",
        "ephemeral",
        "persistentVolumeClaim",
        "projected",
        "secret",
    }
)
APPARMOR_ANNOTATION_PREFIX = "container.apparmor.security.beta.kubernetes.io/"
APPARMOR_ANNOTATION_VALUES = ("runtime/default", "localhost/")  # the second is a prefix
APPARMOR_TYPES = ("RuntimeDefault", "Localhost")
SECCOMP_TYPES = ("RuntimeDefault", "Localhost")
