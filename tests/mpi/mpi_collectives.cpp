// The MPI communicator under mpirun: a plain program, one process per rank, that exits non-zero
// when a check fails. Every rank runs every collective whatever the results, so a failed check
// never leaves another rank waiting.
//
//   mpi_collectives                  collectives with analytic results (any number of ranks),
//                                    reduce_scatter and all_gather_into included
//   mpi_collectives --dead-rank      rank 1 exits without MPI_Finalize; the job must end
//   mpi_collectives --stuck-rank     rank 1 stops calling; rank 0's timeout must end the job
//   --timeout-ms N                   the communicator's timeout (default 2000)
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "duet/autograd/factory.h"
#include "duet/parallel/comm/mpi_communicator.h"

using namespace duet;
using namespace duet::parallel;

namespace {

int checks = 0;
int failures = 0;

void check(bool ok, const std::string& what, int rank) {
  ++checks;
  if (ok) return;
  ++failures;
  std::fprintf(stderr, "mpi_collectives: rank %d: FAILED %s\n", rank, what.c_str());
}

// t[i] = (r + 1) * (i + 1): the sum over n ranks is n(n+1)/2 * (i + 1).
template <class T> Tensor rank_tensor(Shape sizes, int r) {
  std::vector<T> values(static_cast<size_t>(numel(sizes)));
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<T>((r + 1) * static_cast<double>(i + 1));
  return from_vector(values, sizes);
}

template <class T> bool all_equal(const Tensor& t, double (*expected)(size_t, int, int), int n, int root) {
  std::vector<T> v = t.to_vector<T>();
  for (size_t i = 0; i < v.size(); ++i)
    if (v[i] != static_cast<T>(expected(i, n, root))) return false;
  return true;
}

double summed(size_t i, int n, int) { return n * (n + 1) / 2.0 * static_cast<double>(i + 1); }
double averaged(size_t i, int n, int) { return (n + 1) / 2.0 * static_cast<double>(i + 1); }
double root_value(size_t i, int, int root) { return (root + 1) * static_cast<double>(i + 1); }

template <class T> void run_collectives(Communicator& comm, Shape sizes) {
  const int n = comm.world_size(), r = comm.rank();
  const std::string where = std::string(dtype_name(dtype_of<T>())) + shape_str(sizes);
  const int64_t bytes = numel(sizes) * static_cast<int64_t>(sizeof(T));

  comm.reset_stats();
  Tensor t = rank_tensor<T>(sizes, r);
  comm.all_reduce(t);
  check(all_equal<T>(t, summed, n, 0), "all_reduce sum " + where, r);
  int64_t ring = 2 * numel(sizes) * (n - 1) / n;  // exact when n divides numel
  if (numel(sizes) % n == 0) check(comm.stats().bytes_sent == ring * (int64_t)sizeof(T), "ring bytes " + where, r);

  t = rank_tensor<T>(sizes, r);
  comm.all_reduce(t, ReduceOp::avg);
  check(all_equal<T>(t, averaged, n, 0), "all_reduce avg " + where, r);

  for (int root = 0; root < n; ++root) {
    comm.reset_stats();
    t = rank_tensor<T>(sizes, r);
    comm.broadcast(t, root);
    check(all_equal<T>(t, root_value, n, root), "broadcast from " + std::to_string(root) + " " + where, r);
    check(comm.stats().bytes_sent == (r == root ? (n - 1) * bytes : 0), "broadcast bytes " + where, r);

    t = rank_tensor<T>(sizes, r);
    comm.reduce(t, root);
    check(all_equal<T>(t, r == root ? summed : root_value, n, r), "reduce to " + std::to_string(root) + " " + where, r);
  }

  std::vector<Tensor> parts = comm.all_gather(rank_tensor<T>(sizes, r));
  check(static_cast<int>(parts.size()) == n, "all_gather size " + where, r);
  for (int q = 0; q < n && q < static_cast<int>(parts.size()); ++q)
    check(parts[q].sizes() == sizes && all_equal<T>(parts[q], root_value, n, q), "all_gather part " + where, r);
}

// Rank r's chunk of m elements, reduce-scattered from every rank's rank_tensor of n * m.
template <class T> bool chunk_equal(const Tensor& t, double factor, int64_t m, int r) {
  std::vector<T> v = t.to_vector<T>();
  if (static_cast<int64_t>(v.size()) != m) return false;
  for (int64_t j = 0; j < m; ++j)
    if (v[static_cast<size_t>(j)] != static_cast<T>(factor * static_cast<double>(r * m + j + 1))) return false;
  return true;
}

// reduce_scatter (sum, and avg of floating tensors; the input left unchanged; (n-1)/n of it in bytes) and
// all_gather_into (in place and not) with chunks of m elements.
template <class T> void run_scatter_and_gather(Communicator& comm, int64_t m) {
  const int n = comm.world_size(), r = comm.rank();
  const std::string where = std::string(dtype_name(dtype_of<T>())) + "[" + std::to_string(m) + " per rank]";
  for (ReduceOp op : {ReduceOp::sum, ReduceOp::avg}) {
    if (op == ReduceOp::avg && !is_floating(dtype_of<T>())) continue;
    comm.reset_stats();
    Tensor in = rank_tensor<T>({n * m}, r);
    Tensor out = full({m}, -1.0, {.dtype = dtype_of<T>()});
    comm.reduce_scatter(in, out, op);
    const double factor = op == ReduceOp::sum ? n * (n + 1) / 2.0 : (n + 1) / 2.0;
    check(chunk_equal<T>(out, factor, m, r), "reduce_scatter " + std::string(name(op)) + " " + where, r);
    check(all_equal<T>(in, root_value, n, r), "reduce_scatter input unchanged " + where, r);
    check(comm.stats().bytes_sent == (n - 1) * m * static_cast<int64_t>(sizeof(T)), "reduce_scatter bytes " + where, r);
  }
  for (bool in_place : {false, true}) {
    Tensor out = full({n, m}, -1.0, {.dtype = dtype_of<T>()});
    Tensor mine = rank_tensor<T>({m}, r);
    if (in_place) mine = out.as_strided({m}, {1}, r * m).copy_(mine);
    comm.all_gather_into(mine, out);
    bool ok = true;
    for (int q = 0; q < n; ++q) ok = ok && all_equal<T>(out.as_strided({m}, {1}, q * m), root_value, n, q);
    check(ok, std::string("all_gather_into ") + (in_place ? "in place " : "") + where, r);
  }
}

// Several all-reduces in flight, waited in order.
void run_async(Communicator& comm) {
  const int n = comm.world_size(), r = comm.rank();
  std::vector<Tensor> tensors;
  std::vector<std::shared_ptr<Work>> works;
  for (int k = 0; k < 4; ++k) {
    tensors.push_back(rank_tensor<float>({100 + k}, r));
    works.push_back(comm.all_reduce_async(tensors.back()));
  }
  for (int k = 0; k < 4; ++k) {
    works[k]->wait();
    check(all_equal<float>(tensors[k], summed, n, 0), "async all_reduce " + std::to_string(k), r);
  }
  // A reduce-scatter and an all-gather of its result in flight together: an all-reduce in two.
  Tensor gradient = rank_tensor<float>({n * 5}, r), reduced = zeros({n * 5});
  Tensor own_chunk = reduced.as_strided({5}, {1}, r * 5);
  std::shared_ptr<Work> scattered = comm.reduce_scatter_async(gradient, own_chunk);
  std::shared_ptr<Work> gathered = comm.all_gather_into_async(own_chunk, reduced);
  gathered->wait();
  scattered->wait();
  check(all_equal<float>(reduced, summed, n, 0), "async reduce_scatter, then all_gather_into", r);
}

}  // namespace

int main(int argc, char** argv) {
  std::string mode;
  long timeout_ms = 2000;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--timeout-ms" && i + 1 < argc) timeout_ms = std::atol(argv[++i]);
    else mode = arg;
  }
  auto comm = make_mpi_communicator({.timeout = std::chrono::milliseconds(timeout_ms)});
  const int r = comm->rank(), n = comm->world_size();

  if (mode == "--dead-rank" || mode == "--stuck-rank") {
    Tensor t = rank_tensor<float>({4}, r);
    comm->all_reduce(t);  // everyone is up
    if (r == 1) {
      if (mode == "--dead-rank") std::_Exit(0);  // no MPI_Finalize, no goodbye
      std::this_thread::sleep_for(std::chrono::seconds(120));
    }
    comm->all_reduce(t);  // must not return: the timeout (or mpirun) ends the job
    std::fprintf(stderr, "mpi_collectives: rank %d: all_reduce returned without rank 1\n", r);
    return 1;
  }

  for (Shape sizes : {Shape{1}, Shape{7}, Shape{1001}, Shape{3, 5}, Shape{12}}) {
    run_collectives<float>(*comm, sizes);
    run_collectives<double>(*comm, sizes);
  }
  for (int64_t m : {0, 1, 7, 1001}) {
    run_scatter_and_gather<float>(*comm, m);
    run_scatter_and_gather<double>(*comm, m);
    run_scatter_and_gather<int64_t>(*comm, m);
  }
  run_async(*comm);
  comm->barrier();
  check(comm->name() == "mpi", "name", r);
  // ctest starts every rank on this machine: each is its own local rank (what picks its GPU).
  const MpiLocality node = mpi_locality();
  check(node.local_size == n && node.local_rank == r,
        "mpi_locality: local rank " + std::to_string(node.local_rank) + " of " + std::to_string(node.local_size), r);
  check(mpi_locality().local_rank == node.local_rank, "mpi_locality again", r);
  std::printf("mpi_collectives: rank %d of %d: %d checks, %d failed\n", r, n, checks, failures);
  comm.reset();  // before MPI_Finalize at exit
  return failures == 0 ? 0 : 1;
}
