// Loupe's HNSW engine: hnswlib (Debian's libhnswlib-dev headers, the same release as the native
// python3-hnswlib anchor in `npm run bench:index`) compiled to wasm by scripts/build-wasm.sh with
// 128-bit SIMD, -O3, NDEBUG and no emscripten assertions.
//
// A plain C API over one index, made for batch calls: vectors, queries and results cross the JS
// boundary as whole arrays in the wasm heap (one call per batch, not one per element), and the graph
// is serialised to and from a byte buffer. hnswlib's own x86 kernels are switched off
// (NO_MANUAL_VECTORIZATION: they need cpuid); the inner product below is written with wasm SIMD.
//
// Exact search has a kernel here too (loupe_exact_candidates): float32 inner products with SIMD and
// a per-query heap of the best candidates; the caller rescores them exactly (workers/index.worker.ts).
//
// Errors: every entry point catches hnswlib's exceptions (native wasm exceptions, so the happy path
// pays nothing) and returns a failure value; loupe_hnsw_error() gives the message.
#define NO_MANUAL_VECTORIZATION
#include <hnswlib/hnswlib.h>

#include <wasm_simd128.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <fstream>
#include <string>
#include <vector>

namespace {

// 1 − x·y, hnswlib's inner-product "distance", 16 floats per step in four independent accumulators.
float ip_distance(const void *a, const void *b, const void *param) {
  const size_t dim = *static_cast<const size_t *>(param);
  const float *x = static_cast<const float *>(a);
  const float *y = static_cast<const float *>(b);
  v128_t s0 = wasm_f32x4_splat(0.0f), s1 = s0, s2 = s0, s3 = s0;
  size_t i = 0;
  for (; i + 16 <= dim; i += 16) {
    s0 = wasm_f32x4_add(s0, wasm_f32x4_mul(wasm_v128_load(x + i), wasm_v128_load(y + i)));
    s1 = wasm_f32x4_add(s1, wasm_f32x4_mul(wasm_v128_load(x + i + 4), wasm_v128_load(y + i + 4)));
    s2 = wasm_f32x4_add(s2, wasm_f32x4_mul(wasm_v128_load(x + i + 8), wasm_v128_load(y + i + 8)));
    s3 = wasm_f32x4_add(s3, wasm_f32x4_mul(wasm_v128_load(x + i + 12), wasm_v128_load(y + i + 12)));
  }
  for (; i + 4 <= dim; i += 4)
    s0 = wasm_f32x4_add(s0, wasm_f32x4_mul(wasm_v128_load(x + i), wasm_v128_load(y + i)));
  const v128_t s = wasm_f32x4_add(wasm_f32x4_add(s0, s1), wasm_f32x4_add(s2, s3));
  float sum = wasm_f32x4_extract_lane(s, 0) + wasm_f32x4_extract_lane(s, 1) +
              wasm_f32x4_extract_lane(s, 2) + wasm_f32x4_extract_lane(s, 3);
  for (; i < dim; ++i) sum += x[i] * y[i];
  return 1.0f - sum;
}

class IpSpace : public hnswlib::SpaceInterface<float> {
 public:
  explicit IpSpace(size_t dim) : dim_(dim) {}
  size_t get_data_size() override { return dim_ * sizeof(float); }
  hnswlib::DISTFUNC<float> get_dist_func() override { return ip_distance; }
  void *get_dist_func_param() override { return &dim_; }

 private:
  size_t dim_;
};

struct Index {
  explicit Index(size_t dim) : space(dim), dim(dim) {}
  IpSpace space;
  size_t dim;
  hnswlib::HierarchicalNSW<float> *hnsw = nullptr;
  ~Index() { delete hnsw; }
};

std::string last_error;
std::vector<char> saved;
// hnswlib reads and writes streams; the in-memory file system is only a pipe for them.
const char *const SCRATCH = "/loupe-hnsw.bin";

template <typename T, typename F>
T guarded(T failure, F &&f) {
  try {
    last_error.clear();
    return f();
  } catch (const std::exception &e) {
    last_error = e.what();
  } catch (...) {
    last_error = "unknown hnswlib error";
  }
  return failure;
}

}  // namespace

extern "C" {

/** The message of the last failed call ("" when it succeeded). */
const char *loupe_hnsw_error() { return last_error.c_str(); }

/** A new empty index for up to max_elements vectors of dim floats (inner-product space). */
Index *loupe_hnsw_create(int dim, int max_elements, int M, int ef_construction, int seed) {
  return guarded<Index *>(nullptr, [&] {
    if (dim <= 0 || max_elements <= 0 || M <= 1 || ef_construction <= 0)
      throw std::invalid_argument("invalid index parameters");
    auto *ix = new Index(dim);
    try {
      ix->hnsw = new hnswlib::HierarchicalNSW<float>(&ix->space, max_elements, M, ef_construction, seed);
    } catch (...) {
      delete ix;
      throw;
    }
    return ix;
  });
}

void loupe_hnsw_free(Index *ix) { delete ix; }

/** Adds n row-major vectors labelled first_label, first_label + 1, …; 0 on success, -1 on failure. */
int loupe_hnsw_add(Index *ix, const float *data, int n, int first_label) {
  return guarded<int>(-1, [&] {
    for (int i = 0; i < n; ++i)
      ix->hnsw->addPoint(data + static_cast<size_t>(i) * ix->dim, static_cast<size_t>(first_label + i));
    return 0;
  });
}

void loupe_hnsw_set_ef(Index *ix, int ef) { ix->hnsw->setEf(ef); }

int loupe_hnsw_count(Index *ix) { return static_cast<int>(ix->hnsw->cur_element_count); }

int loupe_hnsw_dim(Index *ix) { return static_cast<int>(ix->dim); }

/**
 * k nearest for each of nq row-major queries. Row q of labels/distances (k wide) gets its hits
 * nearest first; counts[q] says how many (fewer than k only when the index is smaller).
 * 0 on success, -1 on failure.
 */
int loupe_hnsw_search(Index *ix, const float *queries, int nq, int k, int *labels, float *distances,
                      int *counts) {
  return guarded<int>(-1, [&] {
    for (int q = 0; q < nq; ++q) {
      auto top = ix->hnsw->searchKnn(queries + static_cast<size_t>(q) * ix->dim, k);
      const int m = static_cast<int>(top.size());
      counts[q] = m;
      // The priority queue pops the farthest first.
      for (int j = m - 1; j >= 0; --j) {
        labels[q * k + j] = static_cast<int>(top.top().second);
        distances[q * k + j] = top.top().first;
        top.pop();
      }
    }
    return 0;
  });
}

/**
 * k nearest to one query among the elements whose labels are not in `excluded` (n_ex labels;
 * repeats and labels not in the index are ignored). hnswlib 0.6 has no filter callback, so the
 * excluded elements are marked deleted for this one search: hnswlib still walks through them but
 * never returns them. The marks are undone before returning, whatever happens. Returns the number
 * of hits written (nearest first), -1 on failure.
 */
int loupe_hnsw_search_excluding(Index *ix, const float *query, int k, const int *excluded, int n_ex, int *labels,
                                float *distances) {
  return guarded<int>(-1, [&] {
    auto &h = *ix->hnsw;
    std::vector<hnswlib::tableint> marked;
    marked.reserve(static_cast<size_t>(n_ex));
    struct Unmark {
      hnswlib::HierarchicalNSW<float> &h;
      std::vector<hnswlib::tableint> &ids;
      ~Unmark() {
        for (auto id : ids) h.unmarkDeletedInternal(id);
      }
    } unmark{h, marked};
    for (int i = 0; i < n_ex; ++i) {
      const auto it = h.label_lookup_.find(static_cast<hnswlib::labeltype>(excluded[i]));
      if (it == h.label_lookup_.end() || h.isMarkedDeleted(it->second)) continue;
      h.markDeletedInternal(it->second);
      marked.push_back(it->second);
    }
    auto top = h.searchKnn(query, k);
    const int m = static_cast<int>(top.size());
    for (int j = m - 1; j >= 0; --j) {
      labels[j] = static_cast<int>(top.top().second);
      distances[j] = top.top().first;
      top.pop();
    }
    return m;
  });
}

/** Serialises the index (hnswlib's own format); returns its size, -1 on failure. */
int loupe_hnsw_save(Index *ix) {
  return guarded<int>(-1, [&] {
    ix->hnsw->saveIndex(SCRATCH);
    std::ifstream in(SCRATCH, std::ios::binary | std::ios::ate);
    if (!in) throw std::runtime_error("could not read the serialised index back");
    const std::streamsize size = in.tellg();
    in.seekg(0);
    saved.resize(static_cast<size_t>(size));
    if (!in.read(saved.data(), size)) throw std::runtime_error("short read of the serialised index");
    in.close();
    std::remove(SCRATCH);
    return static_cast<int>(size);
  });
}

/** The bytes of the last loupe_hnsw_save (valid until the next save or loupe_hnsw_release_saved). */
const char *loupe_hnsw_saved() { return saved.data(); }

void loupe_hnsw_release_saved() { std::vector<char>().swap(saved); }

/** An index from serialised bytes; null on failure (corrupt or truncated bytes included). */
Index *loupe_hnsw_load(const char *bytes, int size, int dim, int max_elements) {
  return guarded<Index *>(nullptr, [&] {
    if (dim <= 0 || size <= 0) throw std::invalid_argument("invalid index bytes or dimension");
    {
      std::ofstream out(SCRATCH, std::ios::binary | std::ios::trunc);
      out.write(bytes, size);
      if (!out) throw std::runtime_error("could not stage the index bytes");
    }
    auto *ix = new Index(dim);
    try {
      ix->hnsw = new hnswlib::HierarchicalNSW<float>(&ix->space, SCRATCH, false, max_elements);
    } catch (...) {
      delete ix;
      std::remove(SCRATCH);
      throw;
    }
    std::remove(SCRATCH);
    return ix;
  });
}

}  // extern "C"

// ---------------------------------------------------------------------------------------------
// Exact search: candidates for the caller to rescore

namespace {

inline float hsum(v128_t v) {
  return wasm_f32x4_extract_lane(v, 0) + wasm_f32x4_extract_lane(v, 1) + wasm_f32x4_extract_lane(v, 2) +
         wasm_f32x4_extract_lane(v, 3);
}

/** Min-heap of (score, index) of capacity kp: keeps the kp largest scores pushed. */
struct Best {
  float *score;
  int *index;
  int size = 0;
  int cap = 0;
  void push(float s, int i) {
    if (size < cap) {
      int c = size++;
      while (c > 0) {
        const int p = (c - 1) / 2;
        if (score[p] <= s) break;
        score[c] = score[p];
        index[c] = index[p];
        c = p;
      }
      score[c] = s;
      index[c] = i;
    } else if (s > score[0]) {
      int c = 0;
      for (;;) {
        int l = 2 * c + 1;
        if (l >= size) break;
        if (l + 1 < size && score[l + 1] < score[l]) ++l;
        if (score[l] >= s) break;
        score[c] = score[l];
        index[c] = index[l];
        c = l;
      }
      score[c] = s;
      index[c] = i;
    }
  }
};

/** Q4 (4 query rows) · D2 (2 document rows) over dim floats: 8 dot products. */
inline void dot4x2(const float *q, const float *d, size_t dim, float out[8]) {
  v128_t a[8];
  for (auto &x : a) x = wasm_f32x4_splat(0.0f);
  const float *q0 = q, *q1 = q + dim, *q2 = q + 2 * dim, *q3 = q + 3 * dim;
  const float *d0 = d, *d1 = d + dim;
  size_t j = 0;
  for (; j + 4 <= dim; j += 4) {
    const v128_t x0 = wasm_v128_load(d0 + j), x1 = wasm_v128_load(d1 + j);
    const v128_t y0 = wasm_v128_load(q0 + j), y1 = wasm_v128_load(q1 + j);
    const v128_t y2 = wasm_v128_load(q2 + j), y3 = wasm_v128_load(q3 + j);
    a[0] = wasm_f32x4_add(a[0], wasm_f32x4_mul(y0, x0));
    a[1] = wasm_f32x4_add(a[1], wasm_f32x4_mul(y1, x0));
    a[2] = wasm_f32x4_add(a[2], wasm_f32x4_mul(y2, x0));
    a[3] = wasm_f32x4_add(a[3], wasm_f32x4_mul(y3, x0));
    a[4] = wasm_f32x4_add(a[4], wasm_f32x4_mul(y0, x1));
    a[5] = wasm_f32x4_add(a[5], wasm_f32x4_mul(y1, x1));
    a[6] = wasm_f32x4_add(a[6], wasm_f32x4_mul(y2, x1));
    a[7] = wasm_f32x4_add(a[7], wasm_f32x4_mul(y3, x1));
  }
  for (int i = 0; i < 8; ++i) out[i] = hsum(a[i]);
  for (; j < dim; ++j) {
    out[0] += q0[j] * d0[j];
    out[1] += q1[j] * d0[j];
    out[2] += q2[j] * d0[j];
    out[3] += q3[j] * d0[j];
    out[4] += q0[j] * d1[j];
    out[5] += q1[j] * d1[j];
    out[6] += q2[j] * d1[j];
    out[7] += q3[j] * d1[j];
  }
}

inline float dot1(const float *q, const float *d, size_t dim) {
  v128_t a = wasm_f32x4_splat(0.0f);
  size_t j = 0;
  for (; j + 4 <= dim; j += 4) a = wasm_f32x4_add(a, wasm_f32x4_mul(wasm_v128_load(q + j), wasm_v128_load(d + j)));
  float s = hsum(a);
  for (; j < dim; ++j) s += q[j] * d[j];
  return s;
}

/**
 * Scores of 4 queries (rows of q) against the m documents at d: out[i * m + r] = q_i · d_r.
 * Kept out of line: V8 moves a wasm function to its optimising tier only between calls, so the hot
 * loop must be a function that is called many times, not a loop inside one long call.
 */
__attribute__((noinline)) void score_block(const float *q, const float *d, int m, size_t dim, float *out) {
  float s8[8];
  int r = 0;
  for (; r + 2 <= m; r += 2) {
    dot4x2(q, d + static_cast<size_t>(r) * dim, dim, s8);
    for (int i = 0; i < 4; ++i) {
      out[i * m + r] = s8[i];
      out[i * m + r + 1] = s8[4 + i];
    }
  }
  for (; r < m; ++r)
    for (int i = 0; i < 4; ++i) out[i * m + r] = dot1(q + i * dim, d + static_cast<size_t>(r) * dim, dim);
}

/** Pushes row `scores` (m wide, documents first..first + m − 1) into one query's heap. */
__attribute__((noinline)) void push_row(Best &b, const float *scores, int m, int first) {
  int r = 0;
  for (; r < m && b.size < b.cap; ++r) b.push(scores[r], first + r);
  float floor = b.size ? b.score[0] : 0.0f;
  for (; r < m; ++r)
    if (scores[r] > floor) {
      b.push(scores[r], first + r);
      floor = b.score[0];
    }
}

// Documents per tile: 128 rows of 384 floats (192 KiB) stay in cache while every query group runs.
constexpr int DOC_TILE = 128;

/** Q4 · D2 in int16 (P a multiple of 8): exact int32 sums, 8 multiply-adds per instruction. */
inline void dot4x2_i16(const int16_t *q, const int16_t *d, size_t P, int32_t out[8]) {
  v128_t a[8];
  for (auto &x : a) x = wasm_i32x4_splat(0);
  const int16_t *q0 = q, *q1 = q + P, *q2 = q + 2 * P, *q3 = q + 3 * P;
  const int16_t *d0 = d, *d1 = d + P;
  for (size_t j = 0; j < P; j += 8) {
    const v128_t x0 = wasm_v128_load(d0 + j), x1 = wasm_v128_load(d1 + j);
    const v128_t y0 = wasm_v128_load(q0 + j), y1 = wasm_v128_load(q1 + j);
    const v128_t y2 = wasm_v128_load(q2 + j), y3 = wasm_v128_load(q3 + j);
    a[0] = wasm_i32x4_add(a[0], wasm_i32x4_dot_i16x8(y0, x0));
    a[1] = wasm_i32x4_add(a[1], wasm_i32x4_dot_i16x8(y1, x0));
    a[2] = wasm_i32x4_add(a[2], wasm_i32x4_dot_i16x8(y2, x0));
    a[3] = wasm_i32x4_add(a[3], wasm_i32x4_dot_i16x8(y3, x0));
    a[4] = wasm_i32x4_add(a[4], wasm_i32x4_dot_i16x8(y0, x1));
    a[5] = wasm_i32x4_add(a[5], wasm_i32x4_dot_i16x8(y1, x1));
    a[6] = wasm_i32x4_add(a[6], wasm_i32x4_dot_i16x8(y2, x1));
    a[7] = wasm_i32x4_add(a[7], wasm_i32x4_dot_i16x8(y3, x1));
  }
  for (int i = 0; i < 8; ++i)
    out[i] = wasm_i32x4_extract_lane(a[i], 0) + wasm_i32x4_extract_lane(a[i], 1) +
             wasm_i32x4_extract_lane(a[i], 2) + wasm_i32x4_extract_lane(a[i], 3);
}

inline int32_t dot1_i16(const int16_t *q, const int16_t *d, size_t P) {
  v128_t a = wasm_i32x4_splat(0);
  for (size_t j = 0; j < P; j += 8) a = wasm_i32x4_add(a, wasm_i32x4_dot_i16x8(wasm_v128_load(q + j), wasm_v128_load(d + j)));
  return wasm_i32x4_extract_lane(a, 0) + wasm_i32x4_extract_lane(a, 1) + wasm_i32x4_extract_lane(a, 2) +
         wasm_i32x4_extract_lane(a, 3);
}

/** int16 scores of 4 queries against m documents, scaled back: out[i * m + r] = Σ q̂·d̂ · qs_i · ds_r. */
__attribute__((noinline)) void score_block_i16(const int16_t *q, const float *qs, const int16_t *d,
                                               const float *ds, int m, size_t P, float *out) {
  int32_t s8[8];
  int r = 0;
  for (; r + 2 <= m; r += 2) {
    dot4x2_i16(q, d + static_cast<size_t>(r) * P, P, s8);
    for (int i = 0; i < 4; ++i) {
      out[i * m + r] = static_cast<float>(s8[i]) * qs[i] * ds[r];
      out[i * m + r + 1] = static_cast<float>(s8[4 + i]) * qs[i] * ds[r + 1];
    }
  }
  for (; r < m; ++r)
    for (int i = 0; i < 4; ++i)
      out[i * m + r] = static_cast<float>(dot1_i16(q + i * P, d + static_cast<size_t>(r) * P, P)) * qs[i] * ds[r];
}

/**
 * The candidate loop shared by both kernels: documents in tiles of DOC_TILE, queries in groups of
 * four (block4 fills 4 × m scores), the remainder one by one (single fills m), each row pushed into
 * its query's heap.
 */
template <typename Block4, typename Single>
int candidates(int d0, int d1, int nq, int kp, int *out_index, float *out_score, int *sizes, Block4 block4,
               Single single) {
  if (d0 < 0 || d1 < d0 || nq <= 0 || kp <= 0) return -1;
  std::vector<Best> best(nq);
  for (int q = 0; q < nq; ++q) {
    best[q].score = out_score + static_cast<size_t>(q) * kp;
    best[q].index = out_index + static_cast<size_t>(q) * kp;
    best[q].cap = kp;
    best[q].size = sizes[q];
    if (sizes[q] < 0 || sizes[q] > kp) return -1;
  }
  std::vector<float> tile(4 * DOC_TILE);
  for (int t0 = d0; t0 < d1; t0 += DOC_TILE) {
    const int m = std::min(d1 - t0, DOC_TILE);
    int q = 0;
    for (; q + 4 <= nq; q += 4) {
      block4(q, t0, m, tile.data());
      for (int i = 0; i < 4; ++i) push_row(best[q + i], tile.data() + i * m, m, t0);
    }
    for (; q < nq; ++q) {
      single(q, t0, m, tile.data());
      push_row(best[q], tile.data(), m, t0);
    }
  }
  for (int q = 0; q < nq; ++q) sizes[q] = best[q].size;
  return 0;
}

}  // namespace

extern "C" {

/**
 * For each of nq queries (row-major, dim wide), the kp documents of `docs` (rows d0..d1 − 1 of a
 * dim-wide matrix) with the largest float32 inner products, merged into what row q of out_index /
 * out_score (kp wide, heap order, not sorted; sizes[q] entries filled) already holds. Calls over
 * consecutive document ranges, starting from sizes all 0, give the candidates of the whole corpus;
 * short calls also let V8 swap in optimised code between them. Float32 sums in SIMD order: scores
 * can differ from a float64 sum by up to dim · 2⁻²⁴ · ‖q‖ · ‖d‖, so the caller rescores the
 * candidates and checks the cut (the smallest score kept) against that bound. 0 on success.
 */
int loupe_exact_candidates(const float *docs, int d0, int d1, int dim, const float *queries, int nq, int kp,
                           int *out_index, float *out_score, int *sizes) {
  if (dim <= 0) return -1;
  const size_t D = static_cast<size_t>(dim);
  return candidates(
      d0, d1, nq, kp, out_index, out_score, sizes,
      [&](int q, int t0, int m, float *tile) {
        score_block(queries + static_cast<size_t>(q) * D, docs + static_cast<size_t>(t0) * D, m, D, tile);
      },
      [&](int q, int t0, int m, float *tile) {
        const float *qp = queries + static_cast<size_t>(q) * D;
        for (int r = 0; r < m; ++r) tile[r] = dot1(qp, docs + static_cast<size_t>(t0 + r) * D, D);
      });
}

/**
 * The same from int16 codes (rows P wide, P a multiple of 8, zero-padded): score = Σ q̂·d̂ (exact in
 * int32 as long as P · max|code|² < 2³¹, which the caller's quantization guarantees) times the
 * query's and the document's scales. Twice the multiply-adds per instruction of float32, at the
 * price of a quantization error the caller bounds per query before trusting the cut.
 */
int loupe_exact_candidates_i16(const int16_t *docs, const float *dscale, int d0, int d1, int P,
                               const int16_t *queries, const float *qscale, int nq, int kp, int *out_index,
                               float *out_score, int *sizes) {
  if (P <= 0 || P % 8 != 0) return -1;
  const size_t D = static_cast<size_t>(P);
  return candidates(
      d0, d1, nq, kp, out_index, out_score, sizes,
      [&](int q, int t0, int m, float *tile) {
        score_block_i16(queries + static_cast<size_t>(q) * D, qscale + q, docs + static_cast<size_t>(t0) * D,
                        dscale + t0, m, D, tile);
      },
      [&](int q, int t0, int m, float *tile) {
        const int16_t *qp = queries + static_cast<size_t>(q) * D;
        for (int r = 0; r < m; ++r)
          tile[r] = static_cast<float>(dot1_i16(qp, docs + static_cast<size_t>(t0 + r) * D, D)) * qscale[q] *
                    dscale[t0 + r];
      });
}

}  // extern "C"
