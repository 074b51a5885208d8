"""
engramdb native kernels (private: use engramdb.kernels)
"""
from __future__ import annotations
import collections.abc
import numpy
import numpy.typing
import typing
__all__: list[str] = ['assign_nearest', 'assign_topk', 'available_isas', 'blake2b_words', 'bm25_query', 'bm25_topk', 'centroid_update', 'cluster_sums', 'compiled_isas', 'cut_passages', 'dense_rescore', 'dense_rescore_keys', 'dense_topk', 'dense_topk_i8', 'distances_from_cosines', 'forced_isa', 'forced_note', 'group_sums', 'hamming_all', 'hamming_topk', 'hash_embed', 'hash_feature_sums', 'hdbscan_precomputed', 'isa', 'jaccard_from_overlaps', 'jaccard_topk', 'maxsim', 'near_signs', 'quantize_int8', 'set_isa', 'sign_bits', 'spherical_kmeans_loop', 'stream_sum', 'tokenize_codepoints', 'tree_search', 'word_features', 'word_rows', 'word_vectors']
def assign_nearest(vectors: numpy.typing.NDArray[numpy.float32], centroids: numpy.typing.NDArray[numpy.float32], metric: typing.SupportsInt | typing.SupportsIndex, threads: typing.SupportsInt | typing.SupportsIndex = 0) -> tuple[numpy.typing.NDArray[numpy.int64], numpy.typing.NDArray[numpy.float32], int]:
    """
    Nearest centroid per vector. Returns (labels, scores, bad_row).
    """
def assign_topk(vectors: numpy.typing.NDArray[numpy.float32], centroids: numpy.typing.NDArray[numpy.float32], metric: typing.SupportsInt | typing.SupportsIndex, m: typing.SupportsInt | typing.SupportsIndex, threads: typing.SupportsInt | typing.SupportsIndex = 0) -> tuple[numpy.typing.NDArray[numpy.int64], numpy.typing.NDArray[numpy.float32], int]:
    """
    The m nearest centroids per vector, nearest first. Returns (labels (n, m), scores (n, m), bad_row).
    """
def available_isas() -> list[str]:
    """
    Instruction sets this CPU runs, best first.
    """
def blake2b_words(codepoints: typing.Annotated[numpy.typing.ArrayLike, numpy.uint32], word_ptr: typing.Annotated[numpy.typing.ArrayLike, numpy.int64], person: bytes) -> numpy.typing.NDArray[numpy.uint64]:
    """
    64-bit BLAKE2b (personalised) of each word's UTF-8, little-endian, uint64.
    """
def bm25_query(terms: numpy.typing.NDArray[numpy.int32], counts: numpy.typing.NDArray[numpy.float32], chunk_terms: numpy.typing.NDArray[numpy.int32], indptr: numpy.typing.NDArray[numpy.int64], docs: numpy.typing.NDArray[numpy.int32], tf: numpy.typing.NDArray[numpy.float32], norm: numpy.typing.NDArray[numpy.float32], k1: typing.SupportsFloat | typing.SupportsIndex, k: typing.SupportsInt | typing.SupportsIndex, n_total: typing.SupportsInt | typing.SupportsIndex, df_total: numpy.typing.NDArray[numpy.int64] | None = None, mask: numpy.typing.NDArray[numpy.uint8] | None = None, sorted_k: typing.SupportsInt | typing.SupportsIndex | None = None) -> tuple[numpy.typing.NDArray[numpy.int64], numpy.typing.NDArray[numpy.float32], int]:
    """
    BM25 top-k of one query given as term ids and counts against one postings chunk (sorted term ids); Lucene idf over n_total docs (df from this chunk, or df_total). Returns (docs, scores, error_code), only real hits; best first up to sorted_k (default all), the rest unordered.
    """
def bm25_topk(query_indptr: numpy.typing.NDArray[numpy.int64], query_rows: numpy.typing.NDArray[numpy.int64], query_weights: numpy.typing.NDArray[numpy.float32], indptr: numpy.typing.NDArray[numpy.int64], docs: numpy.typing.NDArray[numpy.int32], tf: numpy.typing.NDArray[numpy.float32], norm: numpy.typing.NDArray[numpy.float32], k1: typing.SupportsFloat | typing.SupportsIndex, k: typing.SupportsInt | typing.SupportsIndex, mask: numpy.typing.NDArray[numpy.uint8] | None = None, threads: typing.SupportsInt | typing.SupportsIndex = 0) -> tuple[numpy.typing.NDArray[numpy.int64], numpy.typing.NDArray[numpy.float32], int, int]:
    """
    BM25 top-k of CSR queries (posting rows + weights) over CSR postings. Returns (indices, scores, error_query, error_code).
    """
def centroid_update(centroids: numpy.typing.NDArray[numpy.float32], counts: numpy.typing.NDArray[numpy.int64], node_ids: numpy.typing.NDArray[numpy.int64], vectors: numpy.typing.NDArray[numpy.float32]) -> int:
    """
    In-place running-mean update of centroids and counts for (node, vector) pairs, in order. Returns -1, or the first pair that made a centroid non-finite (then nothing changed).
    """
def cluster_sums(vectors: numpy.typing.NDArray[numpy.float32], labels: numpy.typing.NDArray[numpy.int64], n_clusters: typing.SupportsInt | typing.SupportsIndex) -> tuple[numpy.typing.NDArray[numpy.float64], numpy.typing.NDArray[numpy.int64]]:
    """
    Per-cluster float64 sums and int64 counts.
    """
def compiled_isas() -> list[str]:
    """
    Instruction sets compiled into this build, best first.
    """
def cut_passages(codepoints: typing.Annotated[numpy.typing.ArrayLike, numpy.uint32], text_ptr: typing.Annotated[numpy.typing.ArrayLike, numpy.int64], space: typing.Annotated[numpy.typing.ArrayLike, numpy.uint8], words: typing.SupportsInt | typing.SupportsIndex, overlap: typing.SupportsInt | typing.SupportsIndex) -> tuple[numpy.typing.NDArray[numpy.int64], numpy.typing.NDArray[numpy.int64]]:
    """
    Passages of texts given as code points: (span_ptr, spans (k, 2) start/end per passage).
    """
def dense_rescore(queries: numpy.typing.NDArray[numpy.float32], matrix: numpy.ndarray, metric: typing.SupportsInt | typing.SupportsIndex, candidates: numpy.typing.NDArray[numpy.int64], k: typing.SupportsInt | typing.SupportsIndex) -> tuple[numpy.typing.NDArray[numpy.int64], numpy.typing.NDArray[numpy.float32], int]:
    """
    Exact rescoring of candidate rows. Returns (indices, scores, bad_row).
    """
def dense_rescore_keys(query: numpy.typing.NDArray[numpy.float32], matrices: collections.abc.Sequence[numpy.ndarray], bases: numpy.typing.NDArray[numpy.int64], keys: numpy.typing.NDArray[numpy.int64], metric: typing.SupportsInt | typing.SupportsIndex, k: typing.SupportsInt | typing.SupportsIndex, threads: typing.SupportsInt | typing.SupportsIndex = 0) -> tuple[numpy.typing.NDArray[numpy.int64], numpy.typing.NDArray[numpy.float32], int]:
    """
    Exact scores of global keys over segment matrices (matrix s holds keys bases[s]..bases[s+1]-1); duplicates scored once. Returns (keys, scores, bad_key), best first.
    """
def dense_topk(queries: numpy.typing.NDArray[numpy.float32], matrix: numpy.ndarray, metric: typing.SupportsInt | typing.SupportsIndex, k: typing.SupportsInt | typing.SupportsIndex, mask: numpy.typing.NDArray[numpy.uint8] | None = None, threads: typing.SupportsInt | typing.SupportsIndex = 0, full: bool = False) -> tuple[numpy.typing.NDArray[numpy.int64], numpy.typing.NDArray[numpy.float32], numpy.typing.NDArray[numpy.float32] | None, int]:
    """
    Fused scan + top-k over float32/float16 rows. Returns (indices, scores, full_or_None, bad_row).
    """
def dense_topk_i8(queries: numpy.typing.NDArray[numpy.int8], matrix: numpy.typing.NDArray[numpy.int8], k: typing.SupportsInt | typing.SupportsIndex, row_scale: numpy.typing.NDArray[numpy.float32] | None = None, mask: numpy.typing.NDArray[numpy.uint8] | None = None, threads: typing.SupportsInt | typing.SupportsIndex = 0) -> tuple[numpy.typing.NDArray[numpy.int64], numpy.typing.NDArray[numpy.float32]]:
    """
    int8 scan + top-k by integer dot (times row_scale). Returns (indices, scores).
    """
def distances_from_cosines(cosines: numpy.typing.NDArray[numpy.float32], sums: numpy.typing.NDArray[numpy.float64] | None = None) -> None:
    """
    In place: float32 cosines become 1 - cosine, clipped at 0. With sums (float64, n; a square matrix), each row's sum of its distances but the diagonal's, in the same pass.
    """
def forced_isa() -> str:
    """
    The ENGRAMDB_ISA override as given, or ''.
    """
def forced_note() -> str:
    """
    Why the ENGRAMDB_ISA override was not honoured, or ''.
    """
@typing.overload
def group_sums(distances: numpy.typing.NDArray[numpy.float32], rows: numpy.typing.NDArray[numpy.int64], cols: numpy.typing.NDArray[numpy.int64], starts: numpy.typing.NDArray[numpy.int64]) -> numpy.typing.NDArray[numpy.float64]:
    """
    Sums (float64, rows x groups) of distances[row] over each group of columns: group k is cols[starts[k]:starts[k + 1]] (the last runs to the end), added in that order.
    """
@typing.overload
def group_sums(distances: numpy.typing.NDArray[numpy.float64], rows: numpy.typing.NDArray[numpy.int64], cols: numpy.typing.NDArray[numpy.int64], starts: numpy.typing.NDArray[numpy.int64]) -> numpy.typing.NDArray[numpy.float64]:
    ...
def hamming_all(queries: numpy.typing.NDArray[numpy.uint8], codes: numpy.typing.NDArray[numpy.uint8], threads: typing.SupportsInt | typing.SupportsIndex = 0) -> numpy.typing.NDArray[numpy.uint32]:
    """
    All Hamming distances, (nq, n) uint32.
    """
def hamming_topk(queries: numpy.typing.NDArray[numpy.uint8], codes: numpy.typing.NDArray[numpy.uint8], k: typing.SupportsInt | typing.SupportsIndex, mask: numpy.typing.NDArray[numpy.uint8] | None = None, threads: typing.SupportsInt | typing.SupportsIndex = 0) -> tuple[numpy.typing.NDArray[numpy.int64], numpy.typing.NDArray[numpy.int64]]:
    """
    Top-k smallest Hamming distances over packed uint8 codes. Returns (indices, distances).
    """
def hash_embed(counts: typing.Annotated[numpy.typing.ArrayLike, numpy.int64], slots: typing.Annotated[numpy.typing.ArrayLike, numpy.int64], tab_start: typing.Annotated[numpy.typing.ArrayLike, numpy.int64], tab_len: typing.Annotated[numpy.typing.ArrayLike, numpy.int64], hashes: typing.Annotated[numpy.typing.ArrayLike, numpy.uint64], fidx: typing.Annotated[numpy.typing.ArrayLike, numpy.int32], fval: typing.Annotated[numpy.typing.ArrayLike, numpy.float32], log_tf: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], bigram_weight: typing.SupportsFloat | typing.SupportsIndex, dim: typing.SupportsInt | typing.SupportsIndex) -> numpy.typing.NDArray[numpy.float32]:
    """
    The hashing space's vectors: the sums L2-normalised as numpy does it, (n, dim) float32.
    """
def hash_feature_sums(counts: typing.Annotated[numpy.typing.ArrayLike, numpy.int64], slots: typing.Annotated[numpy.typing.ArrayLike, numpy.int64], tab_start: typing.Annotated[numpy.typing.ArrayLike, numpy.int64], tab_len: typing.Annotated[numpy.typing.ArrayLike, numpy.int64], hashes: typing.Annotated[numpy.typing.ArrayLike, numpy.uint64], fidx: typing.Annotated[numpy.typing.ArrayLike, numpy.int32], fval: typing.Annotated[numpy.typing.ArrayLike, numpy.float32], log_tf: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], bigram_weight: typing.SupportsFloat | typing.SupportsIndex, dim: typing.SupportsInt | typing.SupportsIndex) -> numpy.typing.NDArray[numpy.float64]:
    """
    The hashing space's unnormalised fixed-point sums, (n, dim) float64.
    """
@typing.overload
def hdbscan_precomputed(distances: numpy.typing.NDArray[numpy.float32], min_cluster_size: typing.SupportsInt | typing.SupportsIndex, min_samples: typing.SupportsInt | typing.SupportsIndex) -> tuple[numpy.typing.NDArray[numpy.int64], int]:
    """
    HDBSCAN labels (-1: noise) of a square distance matrix, as scikit-learn's precomputed HDBSCAN (excess of mass). Returns (labels, bad_row): bad_row is -1, or the first row with a NaN, inf or negative distance (then labels are meaningless).
    """
@typing.overload
def hdbscan_precomputed(distances: numpy.typing.NDArray[numpy.float64], min_cluster_size: typing.SupportsInt | typing.SupportsIndex, min_samples: typing.SupportsInt | typing.SupportsIndex) -> tuple[numpy.typing.NDArray[numpy.int64], int]:
    ...
def isa() -> str:
    """
    Name of the active instruction set.
    """
def jaccard_from_overlaps(overlaps: numpy.typing.NDArray[numpy.float32], sizes: numpy.typing.NDArray[numpy.float32], sums: numpy.typing.NDArray[numpy.float64] | None = None) -> None:
    """
    In place: float32 overlaps (n x n) of term sets of these sizes become 1 - Jaccard. With sums (float64, n), each row's sum of its distances but the diagonal's, in the same pass.
    """
def jaccard_topk(query: numpy.typing.NDArray[numpy.int32], query_weights: numpy.typing.NDArray[numpy.float32] | None, indptr: numpy.typing.NDArray[numpy.int64], indices: numpy.typing.NDArray[numpy.int32], weights: numpy.typing.NDArray[numpy.float32] | None, k: typing.SupportsInt | typing.SupportsIndex, mask: numpy.typing.NDArray[numpy.uint8] | None = None, threads: typing.SupportsInt | typing.SupportsIndex = 0, full: bool = False) -> tuple[numpy.typing.NDArray[numpy.int64], numpy.typing.NDArray[numpy.float32], numpy.typing.NDArray[numpy.float32] | None, int, int]:
    """
    Top-k (weighted) Jaccard of one sorted id-set against CSR rows. Returns (indices, scores, full_or_None, error_row, error_code).
    """
def maxsim(query_tokens: numpy.typing.NDArray[numpy.float32], doc_tokens: numpy.typing.NDArray[numpy.float32], offsets: numpy.typing.NDArray[numpy.int64], docs: numpy.typing.NDArray[numpy.int64] | None = None, threads: typing.SupportsInt | typing.SupportsIndex = 0) -> tuple[numpy.typing.NDArray[numpy.float32], int]:
    """
    MaxSim scores of ragged documents (or the shortlist `docs`). Returns (scores, bad_doc).
    """
def near_signs(x: typing.Annotated[numpy.typing.ArrayLike, numpy.float32], cols: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], near: typing.Annotated[numpy.typing.ArrayLike, numpy.int64]) -> numpy.typing.NDArray[numpy.bool]:
    """
    Per flat index r * bits + c, whether the float64 dot product of x's row r and cols' row c is > 0.
    """
def quantize_int8(x: typing.Annotated[numpy.typing.ArrayLike, numpy.float32]) -> tuple[numpy.typing.NDArray[numpy.int8], numpy.typing.NDArray[numpy.float32], int]:
    """
    Rows as int8 codes times a scale each (max |x| / 127): (codes, scales, first non-finite row or -1).
    """
def set_isa(name: str) -> bool:
    """
    Switch the active instruction set; returns False if it is not available.
    """
def sign_bits(y: typing.Annotated[numpy.typing.ArrayLike, numpy.float32], tol: typing.Annotated[numpy.typing.ArrayLike, numpy.float32]) -> tuple[numpy.typing.NDArray[numpy.uint8], numpy.typing.NDArray[numpy.int64]]:
    """
    Packed sign bits of rows, entries within +-tol of 0 left 0 and listed: (bits, flat indices near 0).
    """
def spherical_kmeans_loop(vectors: numpy.typing.NDArray[numpy.float32], centroids: numpy.typing.NDArray[numpy.float32], iters: typing.SupportsInt | typing.SupportsIndex) -> tuple[numpy.typing.NDArray[numpy.float32], numpy.typing.NDArray[numpy.int64], int]:
    """
    Spherical k-means iterations from unit centroids (one thread). Returns (centroids, labels, iterations or -(1 + bad row)).
    """
def stream_sum(x: numpy.typing.NDArray[numpy.float32], threads: typing.SupportsInt | typing.SupportsIndex = 0) -> float:
    """
    Sum of a float32 array by a plain streaming read (memory-bandwidth probe).
    """
def tokenize_codepoints(codepoints: typing.Annotated[numpy.typing.ArrayLike, numpy.uint32], text_ptr: typing.Annotated[numpy.typing.ArrayLike, numpy.int64], word_char: typing.Annotated[numpy.typing.ArrayLike, numpy.uint8]) -> tuple[numpy.typing.NDArray[numpy.int64], numpy.typing.NDArray[numpy.int64], numpy.typing.NDArray[numpy.int64], numpy.typing.NDArray[numpy.int64], list[str], numpy.typing.NDArray[numpy.int64]]:
    """
    Tokens of texts given as code points: (counts, codes, first, length, words, starts): per text its token count, per token its distinct token and where it starts in its text, per distinct token where it first appears, its length and its str.
    """
def tree_search(query: numpy.typing.NDArray[numpy.float32], centroids: numpy.typing.NDArray[numpy.float32], child_ptr: numpy.typing.NDArray[numpy.int64], child_idx: numpy.typing.NDArray[numpy.int64], member_ptr: numpy.typing.NDArray[numpy.int64], member_idx: numpy.typing.NDArray[numpy.int64], root: typing.SupportsInt | typing.SupportsIndex, height: typing.SupportsInt | typing.SupportsIndex, matrices: collections.abc.Sequence[typing.Annotated[numpy.typing.ArrayLike, numpy.float32]], bases: numpy.typing.NDArray[numpy.int64], allowed: numpy.typing.NDArray[numpy.uint8] | None, beam: typing.SupportsInt | typing.SupportsIndex, probe: typing.SupportsInt | typing.SupportsIndex, k: typing.SupportsInt | typing.SupportsIndex, unit_rows: bool = False, rows_f16: numpy.typing.NDArray[numpy.uint16] | None = None) -> tuple[numpy.typing.NDArray[numpy.int64], numpy.typing.NDArray[numpy.float32], tuple[int, int, int], numpy.typing.NDArray[numpy.int64], int]:
    """
    Top-K beam descent of a centroid tree and a top-k cosine scan of the kept leaves' members. unit_rows: the matrices' rows are unit length (cosine = dot). rows_f16: member keys are rows of this binary16 unit-row matrix instead (a packed copy). Returns (keys, scores, (centroids, memories, leaves) scored, kept leaf ids, bad_key).
    """
def word_features(codepoints: typing.Annotated[numpy.typing.ArrayLike, numpy.uint32], word_ptr: typing.Annotated[numpy.typing.ArrayLike, numpy.int64], word_hashes: typing.Annotated[numpy.typing.ArrayLike, numpy.uint64], dim: typing.SupportsInt | typing.SupportsIndex, w_word: typing.SupportsFloat | typing.SupportsIndex, w_char: typing.SupportsFloat | typing.SupportsIndex, max_chars: typing.SupportsInt | typing.SupportsIndex) -> tuple[numpy.typing.NDArray[numpy.int64], numpy.typing.NDArray[numpy.int64], numpy.typing.NDArray[numpy.float64]]:
    """
    Signed hashed features of words on their own: (owner, bucket, value).
    """
def word_rows(codepoints: typing.Annotated[numpy.typing.ArrayLike, numpy.uint32], word_ptr: typing.Annotated[numpy.typing.ArrayLike, numpy.int64], word_hashes: typing.Annotated[numpy.typing.ArrayLike, numpy.uint64], dim: typing.SupportsInt | typing.SupportsIndex, w_word: typing.SupportsFloat | typing.SupportsIndex, w_char: typing.SupportsFloat | typing.SupportsIndex, max_chars: typing.SupportsInt | typing.SupportsIndex) -> tuple[numpy.typing.NDArray[numpy.int64], numpy.typing.NDArray[numpy.int32], numpy.typing.NDArray[numpy.float32]]:
    """
    Word features as the hashing space's table keeps them: (lens int64, bucket int32, value float32).
    """
def word_vectors(codepoints: typing.Annotated[numpy.typing.ArrayLike, numpy.uint32], word_ptr: typing.Annotated[numpy.typing.ArrayLike, numpy.int64], word_hashes: typing.Annotated[numpy.typing.ArrayLike, numpy.uint64], dim: typing.SupportsInt | typing.SupportsIndex, w_word: typing.SupportsFloat | typing.SupportsIndex, w_char: typing.SupportsFloat | typing.SupportsIndex, max_chars: typing.SupportsInt | typing.SupportsIndex) -> numpy.typing.NDArray[numpy.float32]:
    """
    Each word's features summed and L2-normalised as numpy does it: (n_words, dim) float32.
    """
