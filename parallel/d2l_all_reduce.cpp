#include "duet/parallel/d2l_all_reduce.h"

#include <string>

#include "duet/autograd/factory.h"
#include "duet/autograd/grad_mode.h"
#include "duet/core/error.h"
#include "duet/kernels/kernels.h"
#include "duet/parallel/transfers.h"

namespace duet::parallel {

void all_reduce_through_first(const std::vector<Tensor>& grads, const LinkModel& link) {
  DUET_CHECK(!grads.empty(), "all_reduce_through_first: no gradients");
  const Tensor& sum = grads[0];
  for (size_t k = 1; k < grads.size(); ++k) {
    DUET_CHECK(grads[k].sizes() == sum.sizes() && grads[k].dtype() == sum.dtype(), "all_reduce_through_first: replica ",
               k, "'s gradient does not match replica 0's");
    const Tensor arrived = transfers::moved(grads[k], sum.device(), link);
    kernels::binary(kernels::BinaryOp::add, sum, arrived, sum);
  }
  for (size_t k = 1; k < grads.size(); ++k) transfers::copy_between(sum, grads[k], link);
}

std::vector<CommEvent> d2l_all_reduce(const std::vector<std::vector<Tensor>>& replicas, const LinkModel& link) {
  NoGradGuard no_grad;
  DUET_CHECK(!replicas.empty(), "d2l_all_reduce: no replicas");
  std::vector<CommEvent> events;
  const double ready = trace_now_us();  // every backward is done
  for (size_t i = 0; i < replicas[0].size(); ++i) {
    std::vector<Tensor> grads;
    bool used = false;
    for (const std::vector<Tensor>& params : replicas) used |= params.at(i).grad().defined();
    if (!used) continue;
    for (const std::vector<Tensor>& params : replicas) {
      if (!params[i].grad().defined()) params[i].set_grad(zeros_like(params[i]));
      grads.push_back(params[i].grad());
    }
    const double launch = trace_now_us();
    all_reduce_through_first(grads, link);
    events.push_back({.name = "parameter " + std::to_string(i),
                      .ready_us = ready,
                      .launch_us = launch,
                      .finish_us = trace_now_us(),
                      .bytes = grads[0].nbytes()});
  }
  return events;
}

}  // namespace duet::parallel
