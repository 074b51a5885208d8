// bm25.h: N3 BM25 over an inverted index (term -> postings), top-k per query.
//
//   score(d) = sum over query terms t of  w_t * tf(t, d) * (k1 + 1) / (tf(t, d) + norm[d])
//
// The caller folds idf and the query's own term count into w_t and the length normalisation
// into norm[d] = k1 * (1 - b + b * len(d) / avgdl): statistics can then cover several postings
// chunks (a base and a recent delta) while each chunk is scored here on its own, and the index
// grows without rewriting per-posting scores (bm25s stores eager scores and must rebuild).
//
// Postings are CSR: row r holds docs[indptr[r]:indptr[r+1]] (doc numbers < n_docs) with their
// term frequencies tf (> 0). Queries are CSR too: query i names posting rows
// q_rows[q_indptr[i]:q_indptr[i+1]] (-1 = a term absent from this chunk) with weights q_w (>= 0).
// Docs outside `mask` (if given) are never returned; a doc matching no query term scores 0 and is
// never returned either. Ties go to the lower doc number. Results are best first up to `sorted_k`;
// past it they are in no order, each worse than every sorted one. Only the posting rows a query touches
// are read, so only those are checked (bad offsets or doc numbers return an error, never crash).
#pragma once
#include <cstddef>
#include <cstdint>

namespace engramdb {

struct Bm25Error {
    int64_t query = -1;  // first offending query, or -1
    int code = 0;        // 1 = posting row out of range, 2 = bad offsets, 3 = doc out of range, 4 = bad weight
};

Bm25Error bm25_topk(const int64_t* q_indptr, size_t nq, const int64_t* q_rows, const float* q_w,
                    const int64_t* indptr, size_t n_rows, const int32_t* docs, const float* tf, size_t n_postings,
                    const float* norm, size_t n_docs, float k1, const uint8_t* mask, size_t k, size_t threads,
                    int64_t* idx, float* scores, size_t sorted_k = SIZE_MAX);

}  // namespace engramdb
