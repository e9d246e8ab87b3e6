// The built-in plans (--default, --full, --cost-sweep, --hosts-sweep, --hosts-sweep-small):
// bench/plans/NAME.json, embedded into knit-bench at build time, expanded over the cost
// profiles a run asks for.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "driver/run/plan.hpp"

namespace knit::bench {

// A built-in plan with the durations, repetitions and connections it was sized for.
struct builtin_plan : plan_sizing {
  std::string name;
  std::vector<plan_case> cases;
};

// One plan file's text, as embedded (generated from bench/plans by embed_plans.cmake).
struct embedded_plan {
  std::string_view name;  // the file name without ".json": "default", "full", "cost-sweep"
  std::string_view json;
};
const std::vector<embedded_plan>& embedded_plans();

// A built-in plan file is an object: "about" (lines of text), "idle_s", "warmup_s",
// "window_s", "repeat", "conns", "profiles" (the cost profiles it runs by default),
// optionally "gen_cpu_share" and "separate_cpus" (plan_sizing), and "cases", whose entries
// set no cost_profile. The cases are repeated for each of
// `profiles` (the plan's own when empty), profile outermost, and checked as any plan is.
// `name` is the plan's name and what messages call it. Throws plan_error naming the field.
builtin_plan parse_builtin_plan(std::string_view name, std::string_view json_text,
                                const std::vector<std::string>& profiles = {});

// A plan file as --plan reads it: a JSON array of cases (the run's sizing applies, and
// `profiles` must be empty), or an object shaped like the built-in plans (its sizing and
// profiles apply, `profiles` overriding the latter). Throws plan_error naming the file.
struct plan_file_contents {
  std::vector<plan_case> cases;
  std::optional<plan_sizing> sizing;  // objects only
};
plan_file_contents read_plan_file(const std::string& path,
                                  const std::vector<std::string>& profiles);

// The embedded plan `name`, or plan_error when there is none.
builtin_plan load_builtin_plan(std::string_view name,
                               const std::vector<std::string>& profiles = {});

}  // namespace knit::bench
