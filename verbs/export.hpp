// Entry points a program reaches instead of libibverbs' (the version script gives each the
// version node libibverbs gives it, so versioned references bind here).
#pragma once

#include <infiniband/verbs.h>

// verbs.h wraps these exported functions in macros or inlines for programs; here they are the
// functions themselves.
#undef ibv_get_device_list
#undef ibv_query_port
#undef ibv_reg_mr
#undef ibv_reg_mr_iova

#define ROCE_VERBS_EXPORT extern "C" __attribute__((visibility("default")))
