// Loupe's HNSW engine: hnswlib (Debian's libhnswlib-dev headers, the same release as the native
// python3-hnswlib anchor in `npm run bench:index`) compiled to wasm by scripts/build-wasm.sh with
// 128-bit SIMD, -O3, NDEBUG and no emscripten assertions.
//
// A plain C API over one index, made for batch calls: vectors, queries and results cross the JS
// boundary as whole arrays in the wasm heap (one call per batch, not one per element), and the graph
// is serialised to and from a byte buffer. hnswlib's own x86 kernels are switched off
// (NO_MANUAL_VECTORIZATION: they need cpuid); the inner product below is written with wasm SIMD.
//
// Errors: every entry point catches hnswlib's exceptions (native wasm exceptions, so the happy path
// pays nothing) and returns a failure value; loupe_hnsw_error() gives the message.
#define NO_MANUAL_VECTORIZATION
#include <hnswlib/hnswlib.h>

#include <wasm_simd128.h>

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
