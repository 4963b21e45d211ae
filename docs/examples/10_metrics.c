/* Metrics: a metered class, its counters read in the program, one actor
 * inspected, the busiest actors listed, and the Prometheus exporter
 * scraped over loopback by a client in this program. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <ura.h>

#define A_WORK URA_ATOM("work")

#define CHECK(call) do {                                                    \
	long rc_ = (long)(call);                                            \
	if (rc_ < 0) {                                                      \
		fprintf(stderr, "%s: %s\n", #call, ura_strerror((int)rc_)); \
		exit(1);                                                    \
	}                                                                   \
} while (0)

static void on_work(ura_ctx *cx, const ura_msg *m)
{
	(void)cx;
	(void)m;
}

URA_BEHAVIOR(working, URA_ON(A_WORK, "i", on_work));

/* Counted per class, never per actor: the metrics' size grows with
 * classes and workers only. */
static const ura_class worker_class = {
	.name = "worker",
	.initial = &working,
	.metrics = URA_CLASS_METRICS,
};

/* GET path from 127.0.0.1:port; the whole answer into buf. */
static void http_get(int port, const char *path, char *buf, size_t cap)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	size_t have = 0;
	buf[0] = 0;
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) < 0) {
		perror("connect");
		exit(1);
	}
	char req[128];
	int n = snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: localhost\r\n\r\n", path);
	if (write(fd, req, (size_t)n) != n)
		exit(1);
	for (ssize_t got; have + 1 < cap && (got = read(fd, buf + have, cap - 1 - have)) > 0;)
		have += (size_t)got; /* one request per connection: read to EOF */
	buf[have] = 0;
	close(fd);
}

int main(void)
{
	ura_system *sys;
	ura_ref w[4];
	CHECK(ura_system_new(&sys, NULL));
	for (int i = 0; i < 4; i++) {
		CHECK(ura_spawn(sys, &worker_class, NULL, &w[i]));
		for (int j = 0; j < 100 * (i + 1); j++)
			CHECK(ura_send(sys, w[i], A_WORK, j));
	}
	CHECK(ura_system_await(sys));

	ura_class_metrics cm[4];
	int n = ura_metrics_classes(sys, cm, 4, NULL);
	CHECK(n);
	for (int i = 0; i < n; i++)
		printf("class %s: %llu live, %llu messages handled\n", cm[i].name,
		       (unsigned long long)cm[i].live, (unsigned long long)cm[i].handled);

	ura_actor_info info;
	CHECK(ura_actor_inspect(sys, w[0], &info));
	printf("the first worker: class %s, behavior %s, %llu handled\n", info.name,
	       info.behavior, (unsigned long long)info.handled);

	ura_actor_info top[2];
	n = ura_metrics_top(sys, URA_TOP_HANDLED, top, 2);
	CHECK(n);
	for (int i = 0; i < n; i++)
		printf("top %d by messages handled: the %s worker, %llu\n", i + 1,
		       ura_ref_eq(top[i].ref, w[3]) ? "fourth" :
		       ura_ref_eq(top[i].ref, w[2]) ? "third" : "other",
		       (unsigned long long)top[i].handled);

	/* The exporter is an actor on a worker's ring; port 0: the kernel
	 * picks one, and *port says which. */
	int port;
	ura_ref exporter;
	CHECK(ura_metrics_serve(sys, "127.0.0.1", 0, &port, &exporter));
	static char page[1 << 20];
	http_get(port, "/metrics", page, sizeof page);
	printf("GET /metrics: %.15s\n", page);
	const char *line = strstr(page, "\nura_class_messages_handled_total{class=\"worker\"}");
	if (line)
		printf("%.*s\n", (int)strcspn(line + 1, "\n"), line + 1);
	else
		printf("no handled total for the worker class\n");

	/* Its accept never ends by itself: stop it before awaiting. */
	CHECK(ura_kill(sys, exporter, URA_KILL));
	CHECK(ura_system_await(sys));
	CHECK(ura_system_destroy(sys));
	return 0;
}
