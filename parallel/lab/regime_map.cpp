#include "duet/parallel/lab/regime_map.h"

#include <algorithm>
#include <cstdio>
#include <utility>

namespace duet::parallel {
namespace {

bool same_cell(const RegimePoint& a, const RegimePoint& b) {
  return a.model == b.model && a.link == b.link && a.measured == b.measured;
}

}  // namespace

void fill_speedups(std::vector<RegimePoint>& points) {
  for (RegimePoint& point : points) {
    point.speedup.reset();
    for (const RegimePoint& single : points) {
      if (single.strategy == StrategyKind::single && same_cell(single, point) && single.images_per_second > 0) {
        point.speedup = point.images_per_second / single.images_per_second;
        break;
      }
    }
  }
}

std::vector<RegimeCell> regime_winners(const std::vector<RegimePoint>& points, bool measured, int devices) {
  std::vector<std::pair<std::string, std::string>> order;  // (model, link), as first named
  for (const RegimePoint& p : points) {
    const std::pair<std::string, std::string> key{p.model, p.link};
    if (p.measured == measured && std::find(order.begin(), order.end(), key) == order.end()) order.push_back(key);
  }
  std::vector<RegimeCell> cells;
  for (const auto& [model, link] : order) {
    const RegimePoint* best = nullptr;
    const RegimePoint* second = nullptr;
    for (const RegimePoint& p : points) {
      const bool competes = p.strategy == StrategyKind::single || p.devices == devices;
      if (p.model != model || p.link != link || p.measured != measured || !competes) continue;
      if (!best || p.images_per_second > best->images_per_second) {
        second = best;
        best = &p;
      } else if (!second || p.images_per_second > second->images_per_second) {
        second = &p;
      }
    }
    if (!best) continue;  // only other device counts: nothing competes here
    RegimeCell cell;
    cell.model = model;
    cell.link = link;
    cell.winner = best->strategy;
    if (second) {
      cell.runner_up = second->strategy;
      if (second->images_per_second > 0) cell.margin = best->images_per_second / second->images_per_second - 1;
    }
    cells.push_back(cell);
  }
  return cells;
}

std::string cell_label(const RegimeCell& cell) {
  std::string label = to_string(cell.winner);
  if (!cell.runner_up) return label;
  const double percent = cell.margin * 100;
  char text[32];
  std::snprintf(text, sizeof text, percent >= 9.95 ? " +%.0f%%" : " +%.1f%%", percent);
  return label + text;
}

}  // namespace duet::parallel
