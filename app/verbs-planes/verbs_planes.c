/* verbs_planes: a Verbs program that uses metaroce/verbs_ext.h. It connects two RC QPs
 * of one device to each other, asks for 8 paths per connection, streams RDMA WRITEs,
 * takes plane 1 out of service in the middle, shows where the paths went, brings the
 * plane back, and checks every byte that landed. Run it under metaroce-run with two
 * plane addresses:
 *   METAROCE_ADDR=127.0.0.1,127.0.0.3 build/drivers/verbs/metaroce-run build/app/verbs-planes/verbs-planes
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/verbs.h>

#include "metaroce/verbs_ext.h"

#define MSG (64 * 1024)
#define ROUNDS 3
#define PER_ROUND 64

struct side {
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	unsigned char *buf;
};

static int die(const char *what, int err)
{
	fprintf(stderr, "verbs-planes: %s: %s\n", what, strerror(err < 0 ? -err : err));
	exit(1);
}

static void make_side(struct ibv_context *ctx, struct ibv_pd *pd, struct side *s, size_t bytes)
{
	struct ibv_qp_init_attr a = {0};
	s->cq = ibv_create_cq(ctx, 256, NULL, NULL, 0);
	if (!s->cq)
		die("ibv_create_cq", errno);
	a.send_cq = a.recv_cq = s->cq;
	a.qp_type = IBV_QPT_RC;
	a.cap.max_send_wr = a.cap.max_recv_wr = 128;
	a.cap.max_send_sge = a.cap.max_recv_sge = 1;
	s->qp = ibv_create_qp(pd, &a);
	if (!s->qp)
		die("ibv_create_qp", errno);
	s->buf = calloc(1, bytes);
	s->mr = ibv_reg_mr(pd, s->buf, bytes, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!s->mr)
		die("ibv_reg_mr", errno);
}

static void connect_to(struct ibv_context *ctx, struct ibv_qp *qp, uint32_t dqpn)
{
	struct ibv_qp_attr a = {0};
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		die("INIT", errno);
	memset(&a, 0, sizeof a);
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_4096;
	a.dest_qp_num = dqpn;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	a.ah_attr.grh.hop_limit = 1;
	if (ibv_query_gid(ctx, 1, 0, &a.ah_attr.grh.dgid))
		die("ibv_query_gid", errno);
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
					  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		die("RTR", errno);
	memset(&a, 0, sizeof a);
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
					  IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC))
		die("RTS", errno);
}

/* Posts PER_ROUND writes of round r and waits for their completions. */
static void write_round(struct side *a, struct side *b, int r)
{
	for (int i = 0; i < PER_ROUND; ++i) {
		size_t off = ((size_t)r * PER_ROUND + i) * MSG;
		struct ibv_sge sg = {(uintptr_t)(a->buf + off), MSG, a->mr->lkey};
		struct ibv_send_wr wr = {0}, *bad;
		wr.wr_id = off;
		wr.sg_list = &sg;
		wr.num_sge = 1;
		wr.opcode = IBV_WR_RDMA_WRITE;
		wr.send_flags = IBV_SEND_SIGNALED;
		wr.wr.rdma.remote_addr = (uintptr_t)(b->buf + off);
		wr.wr.rdma.rkey = b->mr->rkey;
		int rc = ibv_post_send(a->qp, &wr, &bad);
		if (rc)
			die("ibv_post_send", rc);
	}
	for (int done = 0; done < PER_ROUND;) {
		struct ibv_wc wc[16];
		int n = ibv_poll_cq(a->cq, 16, wc);
		if (n < 0)
			die("ibv_poll_cq", EIO);
		for (int i = 0; i < n; ++i) {
			if (wc[i].status != IBV_WC_SUCCESS) {
				fprintf(stderr, "verbs-planes: WRITE failed: %s\n", ibv_wc_status_str(wc[i].status));
				exit(1);
			}
		}
		done += n;
	}
}

/* Prints the QP's connection and paths; returns how many of its paths are on `plane`. */
static int show(struct ibv_context *ctx, struct ibv_qp *qp, const char *when, uint8_t plane)
{
	struct metaroce_conn_attr c;
	struct metaroce_path_attr p[256];
	struct metaroce_plane_attr pl[8];
	int n = metaroce_query_qp_conn(qp, &c, p, 256);
	int np = metaroce_query_planes(ctx, pl, 8);
	if (n < 0 || np < 0)
		die("metaroce_query_qp_conn", n < 0 ? n : np);
	printf("%s: connection %u, %u paths, %u QPs, stream %u, %llu bytes of state\n", when, c.conn_id, c.paths,
	       c.qps, c.stream, (unsigned long long)c.state_bytes);
	for (int i = 0; i < np; ++i) {
		int on = 0;
		for (int k = 0; k < n && k < 256; ++k)
			on += p[k].plane == pl[i].plane;
		printf("  plane %u: admin %s, detected %s, %d of this connection's paths\n", pl[i].plane,
		       pl[i].admin_up ? "up" : "down", pl[i].detected_up ? "up" : "down", on);
	}
	int on_plane = 0;
	for (int k = 0; k < n && k < 256; ++k)
		on_plane += p[k].plane == plane;
	for (int k = 0; k < n && k < 256; ++k)
		printf("  path %2u plane %u sport %5u state %u srtt %6.1f us cwnd %6.1f ecn %.2f tx %llu retx %llu\n",
		       p[k].index, p[k].plane, p[k].udp_sport, p[k].state, p[k].srtt_ns / 1000.0, p[k].cwnd,
		       p[k].ecn_fraction, (unsigned long long)p[k].tx_packets, (unsigned long long)p[k].retransmits);
	return on_plane;
}

int main(void)
{
	int num = 0;
	struct ibv_device **list = ibv_get_device_list(&num);
	if (!list || num == 0)
		die("no RDMA device (run under metaroce-run)", ENODEV);
	if (metaroce_set_paths(8))
		die("metaroce_set_paths", EINVAL);
	struct ibv_context *ctx = ibv_open_device(list[0]);
	if (!ctx)
		die("ibv_open_device", errno);
	if (!metaroce_is_metaroce(ctx))
		die("not a metaroce device", ENODEV);
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct side a, b;
	const size_t bytes = (size_t)ROUNDS * PER_ROUND * MSG;
	make_side(ctx, pd, &a, bytes);
	make_side(ctx, pd, &b, bytes);
	for (size_t i = 0; i < bytes; ++i)
		a.buf[i] = (unsigned char)(i * 7 + (i >> 12));
	connect_to(ctx, a.qp, b.qp->qp_num);
	connect_to(ctx, b.qp, a.qp->qp_num);

	write_round(&a, &b, 0);
	const int before = show(ctx, a.qp, "both planes up", 1);
	if (metaroce_set_plane_admin(ctx, 1, 0))
		die("metaroce_set_plane_admin", EINVAL);
	write_round(&a, &b, 1);
	const int down = show(ctx, a.qp, "plane 1 down", 1);
	metaroce_set_plane_admin(ctx, 1, 1);
	write_round(&a, &b, 2);
	const int back = show(ctx, a.qp, "plane 1 back", 1);
	if (before == 0 || down != 0 || back == 0) {
		fprintf(stderr, "verbs-planes: paths on plane 1: %d before, %d while down, %d after (want >0, 0, >0)\n",
			before, down, back);
		return 1;
	}

	if (memcmp(a.buf, b.buf, bytes) != 0) {
		fprintf(stderr, "verbs-planes: the bytes that landed differ from the source\n");
		return 1;
	}
	printf("verified %zu bytes in %d WRITEs\n", bytes, ROUNDS * PER_ROUND);
	ibv_destroy_qp(a.qp);
	ibv_destroy_qp(b.qp);
	ibv_dereg_mr(a.mr);
	ibv_dereg_mr(b.mr);
	ibv_destroy_cq(a.cq);
	ibv_destroy_cq(b.cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	ibv_free_device_list(list);
	return 0;
}
