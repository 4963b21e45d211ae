// caf_blocking_creation N: libcppa's "actor creation" tree (as
// ../shared/peers/caf/actor_creation.cpp) written with CAF 0.17's blocking
// actors, the peer issue 18 names for ura's context-switching actors
// (bench/actor_creation --body). Each actor receives spread(n), spawns two
// children, receives their two results and answers their sum, as
// sequential code. CAF runs every blocking actor on a thread of its own
// (blocking actors are always detached in 0.17), so the tree costs a
// thread per actor: sizes far below ura's N=19 are what it can run.
// Prints one line: OK internal_s=... actors=... peak_rss_kb=...
// Build: bench/peers/build (g++ -std=c++17 -O2, Debian's libcaf-dev).
#include "caf/all.hpp"

#include <sys/resource.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

using namespace caf;
using spread_atom = atom_constant<atom("spread")>;
using result_atom = atom_constant<atom("result")>;

namespace {

void spreading(blocking_actor* self, actor parent) {
  int32_t x = 0;
  self->receive([&](spread_atom, int32_t v) { x = v; });
  int64_t r = 1;
  if (x > 0) {
    auto me = actor_cast<actor>(self);
    for (int i = 0; i < 2; ++i)
      self->send(self->spawn(spreading, me), spread_atom::value, x - 1);
    int64_t acc = 0;
    for (int i = 0; i < 2; ++i)
      self->receive([&](result_atom, int64_t v) { acc += v; });
    r = acc;
  }
  self->send(parent, result_atom::value, r);
}

} // namespace

int main(int argc, char** argv) {
  long long n = argc > 1 ? std::atoll(argv[1]) : 10;
  if (n < 0 || n > 24) {
    std::fprintf(stderr, "N out of range (0..24)\n");
    return 2;
  }
  int64_t result = -1;
  double dt = 0;
  {
    actor_system_config cfg;
    actor_system sys{cfg};
    scoped_actor self{sys};
    auto t0 = std::chrono::steady_clock::now();
    auto root = sys.spawn(spreading, actor{self});
    self->send(root, spread_atom::value, static_cast<int32_t>(n));
    self->receive([&](result_atom, int64_t r) { result = r; });
    dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  const int64_t want = int64_t{1} << n;
  if (result != want) {
    std::fprintf(stderr, "FAIL result %lld != 2^%lld\n", (long long) result, n);
    return 1;
  }
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  std::printf("OK peer=caf_blocking n=%lld internal_s=%.6f actors=%lld actors_per_s=%.0f "
              "peak_rss_kb=%ld\n",
              n, dt, (long long) (2 * want - 1), (2 * want - 1) / dt, ru.ru_maxrss);
  return 0;
}
