// spip: mpirun -np N spip --config run.cfg
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>

#include "spip/common/freed_memory.hpp"
#include "spip/config/config.hpp"
#include "spip/error.hpp"
#include "spip/job/log.hpp"
#include "spip/job/stop_request.hpp"
#include "spip/parallel/mpi_context.hpp"
#include "spip/pipeline/pipeline.hpp"
#include "spip/planning/plan_report.hpp"
#include "spip/version.hpp"

namespace {

// libgomp reads its spin count once, as it loads, before main(). By default a thread that
// reaches a barrier first spins there for 300,000 rounds before it sleeps, holding a core
// that the channel writer thread (which shares parallel.threads' cores) is waiting for,
// while the thread it waits for is the one the writer pushed off its core. libgomp takes
// 1000 rounds where it knows it is oversubscribed; it cannot know of the writer. Issue
// 46's 128-channel dirty run on 2 threads took 83-88 s with the default, 81.5 s with
// OMP_WAIT_POLICY=passive and 73.6 s with GOMP_SPINCOUNT=1000. Unless the user has chosen
// (either variable set), spip sets it and starts itself again, before MPI starts.
void spin_briefly_at_barriers(char** argv) {
  if (std::getenv("OMP_WAIT_POLICY") || std::getenv("GOMP_SPINCOUNT")) return;
  if (setenv("GOMP_SPINCOUNT", "1000", 1) != 0) return;
  execv("/proc/self/exe", argv);
  // Only if that failed: run on with libgomp's default, and let the log say so.
  unsetenv("GOMP_SPINCOUNT");
}

int report(const spip::parallel::MpiContext& mpi, const std::string& message, spip::ExitCode code) {
  // Every rank detects bad configuration and input alike; one line is enough.
  if (mpi.is_root()) std::fprintf(stderr, "spip: error: %s\n", message.c_str());
  return static_cast<int>(code);
}

}  // namespace

int main(int argc, char** argv) {
  spip::pipeline::StopRequest::hold_signals();
  spin_briefly_at_barriers(argv);
  spip::share_one_heap();
  std::unique_ptr<spip::parallel::MpiContext> world;
  try {
    world = std::make_unique<spip::parallel::MpiContext>(argc, argv);
  } catch (const spip::Error& e) {  // before MPI runs no rank is known: each process says it
    std::fprintf(stderr, "spip: error: %s\n", e.what());
    return static_cast<int>(e.code());
  }
  const spip::parallel::MpiContext& mpi = *world;
  spip::ParsedCommand command;
  try {
    command = spip::parse_command_line(argc, argv);
  } catch (const spip::Error& e) {
    return report(mpi, e.what(), e.code());
  }
  if (command.action != spip::CommandAction::run) spip::pipeline::StopRequest::release_signals();
  switch (command.action) {
    case spip::CommandAction::help:
      if (mpi.is_root()) std::cout << spip::help_text();
      return 0;
    case spip::CommandAction::version:
      if (mpi.is_root()) std::cout << "spip " << spip::version << "\n";
      return 0;
    case spip::CommandAction::print_config:
      if (mpi.is_root()) std::cout << spip::to_ini(command.config);
      return 0;
    case spip::CommandAction::plan:
      if (!mpi.is_root()) return 0;
      try {
        spip::pipeline::print_plan(command.config, {command.plan_ranks, command.plan_rates, command.plan_node_ranks}, mpi.size(), std::cout);
        return 0;
      } catch (const spip::Error& e) {
        return report(mpi, e.what(), e.code());
      } catch (const std::exception& e) {  // only rank 0 plans: one line, no abort of the others
        return report(mpi, std::string("--plan: ") + e.what(), spip::ExitCode::failure);
      }
    case spip::CommandAction::run:
      break;
  }
  const spip::pipeline::Log log(mpi.rank(), mpi.size());
  for (const spip::ParsedCommand::Unused& unused : command.unused) {
    std::string keys;
    for (const std::string& key : unused.keys) keys += (keys.empty() ? "" : ", ") + key;
    log.root("WARNING: " + unused.why + "; these keys have no effect: " + keys);
  }
  try {
    const spip::pipeline::CommittedProducts products = spip::pipeline::run(command.config, mpi, log, command.break_claim);
    if (mpi.is_root()) {
      std::cout << "spip: products in " << command.config.output.dir << ":\n";
      for (const std::string& path : products.paths) std::cout << "  " << path << "\n";
    }
    return 0;
  } catch (const spip::pipeline::Interrupted& e) {
    if (mpi.is_root()) std::fprintf(stderr, "spip: %s\n", e.what());
    return static_cast<int>(e.code());
  } catch (const spip::pipeline::RankFailure& e) {
    std::fprintf(stderr, "spip: rank %d: error: %s\n", mpi.rank(), e.what());
    mpi.abort(static_cast<int>(e.code()));
  } catch (const spip::pipeline::JobFailure& e) {
    return report(mpi, e.what(), e.code());
  } catch (const spip::ConfigError& e) {
    return report(mpi, e.what(), e.code());
  } catch (const spip::InputError& e) {
    return report(mpi, e.what(), e.code());
  } catch (const std::exception& e) {
    // Not necessarily seen by every rank: stop the whole job rather than leave peers waiting.
    std::fprintf(stderr, "spip: rank %d: error: %s\n", mpi.rank(), e.what());
    mpi.abort(static_cast<int>(spip::ExitCode::failure));
  }
}
