/* Bounded mailboxes: what a full mailbox does with one more message,
 * under each policy, and a fast producer muted by a slow consumer. */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <ura.h>

#define A_ITEM URA_ATOM("item")
#define A_MORE URA_ATOM("more")

#define CHECK(call) do {                                                    \
	long rc_ = (long)(call);                                            \
	if (rc_ < 0) {                                                      \
		fprintf(stderr, "%s: %s\n", #call, ura_strerror((int)rc_)); \
		exit(1);                                                    \
	}                                                                   \
} while (0)

/* ---- a consumer that checks the items come in order ------------------- */

typedef struct {
	int64_t next;
} consumer;

static _Atomic int64_t consumed, out_of_order;

static void on_item(ura_ctx *cx, const ura_msg *m)
{
	consumer *c = ura_state(cx);
	if (ura_arg_i64(m, 0) != c->next)
		atomic_fetch_add(&out_of_order, 1);
	c->next = ura_arg_i64(m, 0) + 1;
	atomic_fetch_add(&consumed, 1);
}

URA_BEHAVIOR(consuming, URA_ON(A_ITEM, "i", on_item));

static const ura_class consumer_class = {
	.name = "consumer",
	.state_size = sizeof(consumer),
	.initial = &consuming,
};

/* ---- a producer that sends 64 items a turn ------------------------------ */

enum { TOTAL = 4096, PER_TURN = 64 };

typedef struct {
	ura_ref to;
	int64_t sent;
} producer;

static void on_more(ura_ctx *cx, const ura_msg *m)
{
	producer *p = ura_state(cx);
	if (ura_msg_count(m))
		p->to = ura_arg_ref(m, 0);
	/* A muted producer finishes this handler, then is not scheduled
	 * again until the consumer has drained to its low-water mark. */
	for (int i = 0; i < PER_TURN && p->sent < TOTAL; i++)
		ura_send(cx, p->to, A_ITEM, p->sent++);
	if (p->sent < TOTAL)
		ura_send(cx, ura_self(cx), A_MORE);
}

URA_BEHAVIOR(producing, URA_ON(A_MORE, "r", on_more), URA_ON(A_MORE, "", on_more));

static const ura_class producer_class = {
	.name = "producer",
	.state_size = sizeof(producer),
	.initial = &producing,
};

static void one_more(ura_system *sys, const char *policy, ura_full full)
{
	ura_ref r;
	CHECK(ura_spawn_ex(sys, &consumer_class, NULL, &(ura_spawn_opts){
		.mailbox = &(ura_mailbox_opts){ .capacity = 4, .full = full } }, &r));
	printf("%-12s", policy);
	for (int i = 0; i < 6; i++) {
		int rc = ura_send(sys, r, A_ITEM, i);
		printf(" %s", rc == 0 ? "ok" : rc == URA_DROPPED ? "dropped" :
		       rc == -EAGAIN ? "EAGAIN" : ura_strerror(rc));
	}
	printf("; depth %lld\n", (long long)ura_mailbox_depth(sys, r));
}

int main(void)
{
	ura_system *sys;
	/* Paused: no worker runs yet, so the mailboxes only fill. */
	CHECK(ura_system_new(&sys, &(ura_config){ .paused = 1 }));
	printf("six sends to a mailbox of 4 nobody takes from yet:\n");
	one_more(sys, "refuse", URA_FULL_REFUSE);
	one_more(sys, "drop newest", URA_FULL_DROP_NEWEST);
	/* the oldest go when the actor next takes a message */
	one_more(sys, "drop oldest", URA_FULL_DROP_OLDEST);
	CHECK(ura_system_start(sys));
	CHECK(ura_system_await(sys));
	printf("consumed: %lld\n", (long long)atomic_exchange(&consumed, 0));
	atomic_store(&out_of_order, 0); /* drop oldest skipped items 0 and 1 */

	ura_ref c, p;
	CHECK(ura_spawn_ex(sys, &consumer_class, NULL, &(ura_spawn_opts){
		.mailbox = &(ura_mailbox_opts){ .capacity = 16, .full = URA_FULL_MUTE } }, &c));
	CHECK(ura_spawn(sys, &producer_class, NULL, &p));
	CHECK(ura_send(sys, p, A_MORE, c));
	CHECK(ura_system_await(sys));
	printf("a muted producer: %lld of %d consumed, %lld out of order\n",
	       (long long)atomic_load(&consumed), TOTAL, (long long)atomic_load(&out_of_order));

	ura_stats st;
	CHECK(ura_system_stats(sys, &st));
	fprintf(stderr, "mutes: %llu, over the bound: %llu\n",
		(unsigned long long)st.mb_mutes, (unsigned long long)st.mb_over);
	CHECK(ura_system_destroy(sys));
	return 0;
}
