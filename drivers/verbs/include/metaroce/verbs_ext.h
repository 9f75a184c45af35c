/* metaroce Verbs extensions: what plain Verbs cannot say about a multipath, multiplane
 * transport. C, for programs that run over metaroce-run; every function fails cleanly
 * (returns -EOPNOTSUPP) on a context that is not metaroce's, so a program can call them
 * unconditionally and still run on other devices.
 *
 * Link with -libverbs as usual; the symbols live in metaroce's libibverbs.so.1 (and in
 * the preload shim). A program that must also run without metaroce can look them up
 * with dlsym(RTLD_DEFAULT, "metaroce_query_qp_conn") instead of linking them. */
#ifndef METAROCE_VERBS_EXT_H
#define METAROCE_VERBS_EXT_H

#include <stdint.h>
#include <infiniband/verbs.h>

#ifdef __cplusplus
extern "C" {
#endif

#define METAROCE_EXT_VERSION 1

/* Path states (doc/spec.md 5.8). */
enum metaroce_path_state {
	METAROCE_PATH_GOOD = 0,
	METAROCE_PATH_CONGESTED = 1, /* most packets of its last ACK were CE-marked */
	METAROCE_PATH_SUSPECT = 2,   /* a timeout: used only when no good path has room */
	METAROCE_PATH_FAILED = 3,    /* carries nothing but probes */
};

enum metaroce_conn_state {
	METAROCE_CONN_CONNECTING = 0,
	METAROCE_CONN_ESTABLISHED = 1,
	METAROCE_CONN_CLOSING = 2,
	METAROCE_CONN_CLOSED = 3,
	METAROCE_CONN_ERROR = 4,
};

struct metaroce_plane_attr {
	uint8_t plane;
	uint8_t admin_up;      /* set by metaroce_set_plane_admin */
	uint8_t detected_up;   /* 0 after repeated timeouts with no progress on it */
	uint8_t reserved;
	uint32_t paths;        /* paths on it now, all connections of the context */
	uint32_t addr;         /* the plane's IPv4 address, host byte order */
	uint64_t timeouts;
	uint64_t downs;        /* times it was declared down */
};

struct metaroce_path_attr {
	uint16_t index;
	uint8_t plane;
	uint8_t state;         /* enum metaroce_path_state */
	uint16_t udp_sport;    /* its ECMP entropy */
	uint16_t reserved;
	uint64_t srtt_ns;
	double cwnd;           /* packets */
	double ecn_fraction;   /* CE-marked share of the packets the receiver reported */
	uint64_t tx_packets;
	uint64_t retransmits;
};

/* The connection a QP's traffic rides (spec 12.1): shared by every QP between the two
 * nodes. */
struct metaroce_conn_attr {
	uint32_t conn_id;
	uint32_t peer_addr;    /* the peer's node address, host byte order */
	uint32_t stream;       /* the stream this QP sends on */
	uint8_t state;         /* enum metaroce_conn_state */
	uint8_t reserved[3];
	uint16_t paths;
	uint16_t mtu;
	double conn_cwnd;      /* packets, capped by the receiver's rate hint */
	uint32_t rate_hint_mbps; /* the receiver's last hint (0: none) */
	uint32_t qps;          /* QPs of this context on the connection */
	uint64_t state_bytes;  /* memory the connection holds on this node */
};

/* 1 if ctx is a metaroce device, else 0. */
int metaroce_is_metaroce(struct ibv_context *ctx);

/* Paths per connection for contexts opened after this call (1..256; default 16 or
 * METAROCE_PATHS). 0, or -EINVAL. */
int metaroce_set_paths(uint16_t paths);

/* Fills up to max planes; returns how many the context has, or -errno. */
int metaroce_query_planes(struct ibv_context *ctx, struct metaroce_plane_attr *planes, int max);

/* Takes a plane out of service (up = 0) or back (up = 1): every path on it moves to
 * the other planes at once, with no error to any QP. 0, or -errno. */
int metaroce_set_plane_admin(struct ibv_context *ctx, uint8_t plane, int up);

/* The QP's connection and up to max_paths of its paths. Returns the number of paths
 * the connection has (may exceed max_paths), -ENOTCONN if the QP is not bound to a
 * connection yet (spec 12.3), or -errno. */
int metaroce_query_qp_conn(struct ibv_qp *qp, struct metaroce_conn_attr *conn,
			   struct metaroce_path_attr *paths, int max_paths);

#ifdef __cplusplus
}
#endif

#endif /* METAROCE_VERBS_EXT_H */
