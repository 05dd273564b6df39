// Model files through the public API (include/qnt/qnt_io.h): safetensors written and read back
// with every kind of tensor, the writer's rules, sharded indexes, and bad files refused with
// QNT_ERR_CORRUPT_DATA (each by the rule it breaks) rather than read.
#include "helpers.hpp"

#include <qnt/qnt_io.h>

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace {
using namespace qnt_test;

struct File {
  qnt_model_file *f = nullptr;
  ~File() { qnt_model_file_destroy(f); }
};
struct W {
  qnt_model_writer *w = nullptr;
  ~W() { qnt_model_writer_destroy(w); }
};

// A fresh path in the test's temporary folder, removed at the end.
struct TmpPath {
  std::string p;
  explicit TmpPath(const std::string &name) {
    const char *dir = std::getenv("TMPDIR");
    p = std::string(dir != nullptr ? dir : "/tmp") + "/qnt_test_" + std::to_string(::getpid()) + "_" + name;
  }
  ~TmpPath() {
    std::remove(p.c_str());
    std::remove((p + ".partial").c_str());
  }
};

void write_raw(const std::string &path, const std::string &bytes) {
  std::ofstream o(path, std::ios::binary);
  o.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// A safetensors file from a header text and data bytes.
std::string st_bytes(const std::string &header, const std::string &data, uint64_t len_override = 0) {
  const uint64_t n = len_override != 0 ? len_override : header.size();
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[static_cast<size_t>(i)] = static_cast<char>((n >> (8 * i)) & 0xFF);
  return s + header + data;
}

qnt_status open_status(const std::string &path, std::string *msg = nullptr) {
  File f;
  const qnt_status s = qnt_model_file_open(path.c_str(), &f.f);
  if (msg != nullptr) *msg = s == QNT_OK ? "" : qnt_last_error_message();
  return s;
}

TEST(ModelFile, SafetensorsRoundTrip) {
  TmpPath path("round.safetensors");
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> xf(6 * 40);
  for (auto &v : xf) v = normal(rng);
  T x;
  make_f32(x, {6, 40}, xf);
  // i8 per channel (symmetric: no zero-point entry), i4 per block of 16 (a partial last block),
  // u4 affine per block, NF4, bf16 and a raw I64 entry.
  QP q8, q4, qu4, qnf;
  ASSERT_EQ(qnt_calibrate_minmax(nullptr, x.t, QNT_DTYPE_I8, QNT_SCHEME_SYMMETRIC, QNT_GRANULARITY_PER_AXIS, 0, 0, &q8.p), QNT_OK);
  ASSERT_EQ(qnt_calibrate_minmax(nullptr, x.t, QNT_DTYPE_I4, QNT_SCHEME_SYMMETRIC, QNT_GRANULARITY_PER_BLOCK, 1, 16, &q4.p), QNT_OK);
  ASSERT_EQ(qnt_calibrate_minmax(nullptr, x.t, QNT_DTYPE_U4, QNT_SCHEME_AFFINE, QNT_GRANULARITY_PER_BLOCK, 1, 32, &qu4.p), QNT_OK);
  ASSERT_EQ(qnt_calibrate_codebook(nullptr, x.t, QNT_DTYPE_NF4, QNT_GRANULARITY_PER_BLOCK, 1, 64, &qnf.p), QNT_OK);
  T y8, y4, yu4, ynf;
  const int64_t shape[2] = {6, 40};
  for (auto [y, q] : {std::pair<T *, QP *>{&y8, &q8}, {&y4, &q4}, {&yu4, &qu4}, {&ynf, &qnf}}) {
    qnt_qparams *qp = q->p;
    qnt_dtype d = 0;
    ASSERT_EQ(qnt_qparams_dtype(qp, &d), QNT_OK);
    ASSERT_EQ(qnt_tensor_create(d, shape, 2, qp, &y->t), QNT_OK);
    ASSERT_EQ(qnt_quantize(nullptr, x.t, y->t), QNT_OK);
  }
  std::vector<uint16_t> bf(7);
  for (size_t i = 0; i < bf.size(); ++i) bf[i] = static_cast<uint16_t>(0x3F80 + i);
  T b;
  const int64_t bshape[1] = {7};
  ASSERT_EQ(qnt_tensor_create_from_data(QNT_DTYPE_BF16, bshape, 1, nullptr, bf.data(), 14, &b.t), QNT_OK);
  const std::vector<int64_t> longs = {1, -2, 3};
  {
    W w;
    ASSERT_EQ(qnt_model_writer_create(path.p.c_str(), QNT_FILE_SAFETENSORS, &w.w), QNT_OK) << qnt_last_error_message();
    ASSERT_EQ(qnt_model_writer_set_metadata(w.w, "format", "pt"), QNT_OK);
    EXPECT_EQ(qnt_model_writer_set_metadata(w.w, "format", "again"), QNT_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(qnt_model_writer_set_metadata(w.w, "qnt.x", "v"), QNT_ERR_INVALID_ARGUMENT);
    ASSERT_EQ(qnt_model_writer_declare(w.w, "x", QNT_DTYPE_F32, shape, 2, nullptr), QNT_OK);
    ASSERT_EQ(qnt_model_writer_declare(w.w, "w8", QNT_DTYPE_I8, shape, 2, q8.p), QNT_OK);
    ASSERT_EQ(qnt_model_writer_declare(w.w, "w4", QNT_DTYPE_I4, shape, 2, q4.p), QNT_OK);
    ASSERT_EQ(qnt_model_writer_declare(w.w, "wu4", QNT_DTYPE_U4, shape, 2, qu4.p), QNT_OK);
    ASSERT_EQ(qnt_model_writer_declare(w.w, "wnf4", QNT_DTYPE_NF4, shape, 2, qnf.p), QNT_OK);
    ASSERT_EQ(qnt_model_writer_declare(w.w, "b", QNT_DTYPE_BF16, bshape, 1, nullptr), QNT_OK);
    const int64_t lshape[1] = {3};
    ASSERT_EQ(qnt_model_writer_declare_bytes(w.w, "pos", "I64", lshape, 1, 24), QNT_OK);
    // Refused declarations: a duplicate, qnt's suffixes, a packed dtype without qparams, a
    // layout of another dtype or shape.
    EXPECT_EQ(qnt_model_writer_declare(w.w, "x", QNT_DTYPE_F32, shape, 2, nullptr), QNT_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(qnt_model_writer_declare(w.w, "a.qnt_scales", QNT_DTYPE_F32, shape, 2, nullptr), QNT_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(qnt_model_writer_declare(w.w, "p", QNT_DTYPE_I4, shape, 2, nullptr), QNT_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(qnt_model_writer_declare(w.w, "p", QNT_DTYPE_U4, shape, 2, q4.p), QNT_ERR_DTYPE_MISMATCH);
    const int64_t other[2] = {7, 40};
    EXPECT_EQ(qnt_model_writer_declare(w.w, "p", QNT_DTYPE_I8, other, 2, q8.p), QNT_ERR_SHAPE_MISMATCH);
    EXPECT_EQ(qnt_model_writer_declare_bytes(w.w, "p", "I64", lshape, 1, 23), QNT_ERR_SHAPE_MISMATCH);
    EXPECT_EQ(qnt_model_writer_declare_bytes(w.w, "p", "F128", lshape, 1, 48), QNT_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(qnt_model_writer_finish(w.w), QNT_ERR_INVALID_ARGUMENT);  // nothing written yet
    // The writes, in order; a wrong one first.
    EXPECT_EQ(qnt_model_writer_write(w.w, y8.t), QNT_ERR_DTYPE_MISMATCH);
    ASSERT_EQ(qnt_model_writer_write(w.w, x.t), QNT_OK) << qnt_last_error_message();
    EXPECT_EQ(qnt_model_writer_declare(w.w, "late", QNT_DTYPE_F32, shape, 2, nullptr), QNT_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(qnt_model_writer_set_metadata(w.w, "late", "v"), QNT_ERR_INVALID_ARGUMENT);
    ASSERT_EQ(qnt_model_writer_write(w.w, y8.t), QNT_OK);
    ASSERT_EQ(qnt_model_writer_write(w.w, y4.t), QNT_OK);
    ASSERT_EQ(qnt_model_writer_write(w.w, yu4.t), QNT_OK);
    ASSERT_EQ(qnt_model_writer_write(w.w, ynf.t), QNT_OK);
    ASSERT_EQ(qnt_model_writer_write(w.w, b.t), QNT_OK);
    EXPECT_EQ(qnt_model_writer_write_bytes(w.w, longs.data(), 16), QNT_ERR_SHAPE_MISMATCH);
    ASSERT_EQ(qnt_model_writer_write_bytes(w.w, longs.data(), 24), QNT_OK);
    EXPECT_EQ(qnt_model_writer_write(w.w, x.t), QNT_ERR_INVALID_ARGUMENT);  // past the last
    EXPECT_NE(access(path.p.c_str(), F_OK), 0);  // only the .partial file until finish
    ASSERT_EQ(qnt_model_writer_finish(w.w), QNT_OK) << qnt_last_error_message();
  }
  File f;
  ASSERT_EQ(qnt_model_file_open(path.p.c_str(), &f.f), QNT_OK) << qnt_last_error_message();
  qnt_file_format fmt = 0;
  ASSERT_EQ(qnt_model_file_format(f.f, &fmt), QNT_OK);
  EXPECT_EQ(fmt, QNT_FILE_SAFETENSORS);
  size_t n = 0;
  ASSERT_EQ(qnt_model_file_tensor_count(f.f, &n), QNT_OK);
  // x, w8 + scales, w4 + scales, wu4 + scales + zero points, wnf4 + scales, b, pos.
  EXPECT_EQ(n, 12u);
  const char *s = nullptr;
  ASSERT_EQ(qnt_model_file_metadata_string(f.f, "format", &s), QNT_OK);
  EXPECT_STREQ(s, "pt");
  ASSERT_EQ(qnt_model_file_metadata_string(f.f, "qnt.w4", &s), QNT_OK);
  EXPECT_STREQ(s, "dtype=i4;shape=6,40;granularity=block;axis=1;block=16");
  size_t i = 0;
  EXPECT_EQ(qnt_model_file_tensor_find(f.f, "w8.qnt_zero_points", &i), QNT_ERR_INVALID_ARGUMENT);
  ASSERT_EQ(qnt_model_file_tensor_find(f.f, "wu4.qnt_zero_points", &i), QNT_OK);
  // Every tensor back, bit for bit, with its qparams.
  for (auto [name, want] : {std::pair<const char *, qnt_tensor *>{"x", x.t}, {"w8", y8.t}, {"w4", y4.t},
                            {"wu4", yu4.t}, {"wnf4", ynf.t}, {"b", b.t}}) {
    ASSERT_EQ(qnt_model_file_tensor_find(f.f, name, &i), QNT_OK) << name;
    T got;
    ASSERT_EQ(qnt_model_file_tensor(f.f, i, &got.t), QNT_OK) << name << ": " << qnt_last_error_message();
    qnt_dtype dg = 0, dw = 0;
    ASSERT_EQ(qnt_tensor_dtype(got.t, &dg), QNT_OK);
    ASSERT_EQ(qnt_tensor_dtype(want, &dw), QNT_OK);
    EXPECT_EQ(dg, dw) << name;
    EXPECT_EQ(bytes_of(got.t), bytes_of(want)) << name;
    int32_t ro = 0;
    ASSERT_EQ(qnt_tensor_is_read_only(got.t, &ro), QNT_OK);
    EXPECT_EQ(ro, 1) << name;
    qnt_qparams *gq = nullptr, *wq = nullptr;
    ASSERT_EQ(qnt_tensor_qparams(got.t, &gq), QNT_OK);
    ASSERT_EQ(qnt_tensor_qparams(want, &wq), QNT_OK);
    QP gh, wh;
    gh.p = gq;
    wh.p = wq;
    ASSERT_EQ(gq == nullptr, wq == nullptr) << name;
    if (gq == nullptr) continue;
    size_t cg = 0, cw = 0;
    ASSERT_EQ(qnt_qparams_scale_count(gq, &cg), QNT_OK);
    ASSERT_EQ(qnt_qparams_scale_count(wq, &cw), QNT_OK);
    ASSERT_EQ(cg, cw) << name;
    std::vector<float> sg(cg), sw(cw);
    std::vector<int32_t> zg(cg), zw(cw);
    ASSERT_EQ(qnt_qparams_scales(gq, sg.data(), cg), QNT_OK);
    ASSERT_EQ(qnt_qparams_scales(wq, sw.data(), cw), QNT_OK);
    ASSERT_EQ(qnt_qparams_zero_points(gq, zg.data(), cg), QNT_OK);
    ASSERT_EQ(qnt_qparams_zero_points(wq, zw.data(), cw), QNT_OK);
    EXPECT_EQ(std::memcmp(sg.data(), sw.data(), 4 * cg), 0) << name;
    EXPECT_EQ(zg, zw) << name;
  }
  // The raw entry: listed with its file dtype, readable as bytes, refused as a qnt tensor; and a
  // tensor outlives its file handle (it holds the mapping).
  ASSERT_EQ(qnt_model_file_tensor_find(f.f, "pos", &i), QNT_OK);
  ASSERT_EQ(qnt_model_file_tensor_type(f.f, i, &s), QNT_OK);
  EXPECT_STREQ(s, "I64");
  const void *data = nullptr;
  size_t bytes = 0;
  ASSERT_EQ(qnt_model_file_tensor_bytes(f.f, i, &data, &bytes), QNT_OK);
  ASSERT_EQ(bytes, 24u);
  EXPECT_EQ(std::memcmp(data, longs.data(), 24), 0);
  T refused;
  EXPECT_EQ(qnt_model_file_tensor(f.f, i, &refused.t), QNT_ERR_UNSUPPORTED);
  EXPECT_EQ(refused.t, nullptr);
  size_t rank = 9;
  EXPECT_EQ(qnt_model_file_tensor_shape(f.f, 0, nullptr, 0, &rank), QNT_ERR_BUFFER_TOO_SMALL);
  EXPECT_EQ(rank, 2u);
  EXPECT_EQ(qnt_model_file_tensor_name(f.f, n, &s), QNT_ERR_INVALID_ARGUMENT);
  ASSERT_EQ(qnt_model_file_tensor_find(f.f, "x", &i), QNT_OK);
  T keep;
  ASSERT_EQ(qnt_model_file_tensor(f.f, i, &keep.t), QNT_OK);
  qnt_model_file_destroy(f.f);
  f.f = nullptr;
  EXPECT_EQ(bytes_of(keep.t), bytes_of(x.t));
}

TEST(ModelFile, WriterLeavesNothingBehindUnlessFinished) {
  TmpPath path("unfinished.safetensors");
  const int64_t shape[1] = {4};
  const float v[4] = {1, 2, 3, 4};
  T x;
  ASSERT_EQ(qnt_tensor_create_from_data(QNT_DTYPE_F32, shape, 1, nullptr, v, 16, &x.t), QNT_OK);
  {
    W w;
    ASSERT_EQ(qnt_model_writer_create(path.p.c_str(), QNT_FILE_SAFETENSORS, &w.w), QNT_OK);
    ASSERT_EQ(qnt_model_writer_declare(w.w, "a", QNT_DTYPE_F32, shape, 1, nullptr), QNT_OK);
    ASSERT_EQ(qnt_model_writer_declare(w.w, "b", QNT_DTYPE_F32, shape, 1, nullptr), QNT_OK);
    ASSERT_EQ(qnt_model_writer_write(w.w, x.t), QNT_OK);
    EXPECT_EQ(qnt_model_writer_finish(w.w), QNT_ERR_INVALID_ARGUMENT);  // b is missing
  }
  EXPECT_NE(access(path.p.c_str(), F_OK), 0);
  EXPECT_NE(access((path.p + ".partial").c_str(), F_OK), 0);
  W g;
  EXPECT_EQ(qnt_model_writer_create(path.p.c_str(), 99, &g.w), QNT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(qnt_model_writer_create("/nonexistent-dir/x.safetensors", QNT_FILE_SAFETENSORS, &g.w),
            QNT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(g.w, nullptr);
  // Symmetric qparams declared without zero points refuse a tensor whose zero points are not 0.
  TmpPath p2("zp.safetensors");
  QP zero, nonzero;
  ASSERT_EQ(qnt_qparams_create_per_tensor(QNT_DTYPE_U8, 0.1f, 0, &zero.p), QNT_OK);
  ASSERT_EQ(qnt_qparams_create_per_tensor(QNT_DTYPE_U8, 0.1f, 7, &nonzero.p), QNT_OK);
  T q;
  ASSERT_EQ(qnt_tensor_create(QNT_DTYPE_U8, shape, 1, nonzero.p, &q.t), QNT_OK);
  W w2;
  ASSERT_EQ(qnt_model_writer_create(p2.p.c_str(), QNT_FILE_SAFETENSORS, &w2.w), QNT_OK);
  ASSERT_EQ(qnt_model_writer_declare(w2.w, "q", QNT_DTYPE_U8, shape, 1, zero.p), QNT_OK);
  EXPECT_EQ(qnt_model_writer_write(w2.w, q.t), QNT_ERR_INVALID_QPARAMS);
}

// Each malformed file is refused with the status its rule gives, never read.
TEST(ModelFile, BadSafetensorsAreRefused) {
  TmpPath path("bad.safetensors");
  const std::string ok_entry = R"("a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})";
  const std::string eight(8, '\1');
  struct Case {
    const char *what;
    std::string file;
    qnt_status want;
  };
  const std::vector<Case> cases = {
      {"empty file", "", QNT_ERR_CORRUPT_DATA},
      {"shorter than the length", "abc", QNT_ERR_CORRUPT_DATA},
      {"truncated header", st_bytes("{" + ok_entry + "}", "", 500), QNT_ERR_CORRUPT_DATA},
      {"2^63-byte header", st_bytes("{}", "", uint64_t{1} << 63), QNT_ERR_CORRUPT_DATA},
      {"header over the cap", st_bytes("{}", "", 100000001), QNT_ERR_CORRUPT_DATA},
      {"not JSON", st_bytes("{\"a\":", eight), QNT_ERR_CORRUPT_DATA},
      {"not an object", st_bytes("[1,2]", eight), QNT_ERR_CORRUPT_DATA},
      {"non-UTF-8 name", st_bytes("{\"\xff\xfe\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", eight),
       QNT_ERR_CORRUPT_DATA},
      {"unknown dtype", st_bytes(R"({"a":{"dtype":"F7","shape":[2],"data_offsets":[0,8]}})", eight),
       QNT_ERR_CORRUPT_DATA},
      {"lying length", st_bytes(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", eight),
       QNT_ERR_CORRUPT_DATA},
      {"offsets past the data", st_bytes(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}})", eight),
       QNT_ERR_CORRUPT_DATA},
      {"reversed offsets", st_bytes(R"({"a":{"dtype":"U8","shape":[0],"data_offsets":[8,0]}})", eight),
       QNT_ERR_CORRUPT_DATA},
      {"negative dimension", st_bytes(R"({"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", eight),
       QNT_ERR_CORRUPT_DATA},
      {"overlap", st_bytes("{" + ok_entry + R"(,"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", eight),
       QNT_ERR_CORRUPT_DATA},
      {"gap", st_bytes(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", eight), QNT_ERR_CORRUPT_DATA},
      {"uncovered tail", st_bytes("{" + ok_entry + "}", eight + "xx"), QNT_ERR_CORRUPT_DATA},
      {"huge shape", st_bytes(R"({"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]}})", eight),
       QNT_ERR_CORRUPT_DATA},
      {"metadata not strings", st_bytes("{\"__metadata__\":{\"k\":1}," + ok_entry + "}", eight),
       QNT_ERR_CORRUPT_DATA},
      {"qnt key without its tensors",
       st_bytes("{\"__metadata__\":{\"qnt.a\":\"dtype=i4;shape=4;granularity=tensor;axis=0;block=0\"}," + ok_entry + "}",
                eight),
       QNT_ERR_CORRUPT_DATA},
      {"qnt key of another size",
       st_bytes(std::string("{\"__metadata__\":{\"qnt.a\":\"dtype=i8;shape=5;granularity=tensor;axis=0;block=0\"},") +
                    R"("a":{"dtype":"I8","shape":[4],"data_offsets":[0,4]},"a.qnt_scales":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                eight),
       QNT_ERR_CORRUPT_DATA},
      {"GGUF of a bad version (read as GGUF, not safetensors)", "GGUF\3\0\0\0" + eight, QNT_ERR_CORRUPT_DATA},
  };
  for (const Case &c : cases) {
    write_raw(path.p, c.file);
    std::string msg;
    EXPECT_EQ(open_status(path.p, &msg), c.want) << c.what << ": " << msg;
  }
  // And a well-formed one opens (the cases differ from it by their one fault).
  write_raw(path.p, st_bytes("{" + ok_entry + "}", eight));
  EXPECT_EQ(open_status(path.p), QNT_OK) << qnt_last_error_message();
  write_raw(path.p,
            st_bytes(std::string("{\"__metadata__\":{\"qnt.a\":\"dtype=i8;shape=4;granularity=tensor;axis=0;block=0\"},") +
                         R"("a":{"dtype":"I8","shape":[4],"data_offsets":[0,4]},"a.qnt_scales":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                     std::string("\1\2\3\4") + std::string("\0\0\200\77", 4)));
  EXPECT_EQ(open_status(path.p), QNT_OK) << qnt_last_error_message();
  EXPECT_EQ(open_status("/nonexistent/file.safetensors"), QNT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(open_status("/"), QNT_ERR_INVALID_ARGUMENT);  // a folder without an index
  File f;
  EXPECT_EQ(qnt_model_file_open(nullptr, &f.f), QNT_ERR_NULL_POINTER);
}

// A sharded model: the index's folder opens as one file, every tensor from its shard.
TEST(ModelFile, ShardedIndex) {
  char tmpl[] = "/tmp/qnt_shardsXXXXXX";
  const char *dir = mkdtemp(tmpl);
  ASSERT_NE(dir, nullptr);
  const std::string d = dir;
  write_raw(d + "/s1.safetensors", st_bytes(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", std::string("\0\0\200\77", 4)));
  write_raw(d + "/s2.safetensors", st_bytes(R"({"b":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}})", "\7\11"));
  write_raw(d + "/model.safetensors.index.json",
            R"({"metadata":{"total_size":6},"weight_map":{"a":"s1.safetensors","b":"s2.safetensors"}})");
  {
    File f;
    ASSERT_EQ(qnt_model_file_open(dir, &f.f), QNT_OK) << qnt_last_error_message();
    size_t n = 0, i = 0;
    ASSERT_EQ(qnt_model_file_tensor_count(f.f, &n), QNT_OK);
    EXPECT_EQ(n, 2u);
    ASSERT_EQ(qnt_model_file_tensor_find(f.f, "b", &i), QNT_OK);
    T b;
    ASSERT_EQ(qnt_model_file_tensor(f.f, i, &b.t), QNT_OK);
    EXPECT_EQ(bytes_of(b.t), (std::vector<uint8_t>{7, 9}));
  }
  // An index naming a tensor its shard lacks is refused.
  write_raw(d + "/model.safetensors.index.json", R"({"weight_map":{"a":"s2.safetensors","b":"s2.safetensors"}})");
  EXPECT_EQ(open_status(d), QNT_ERR_CORRUPT_DATA);
  write_raw(d + "/model.safetensors.index.json", R"({"weight_map":{"a":"../s1.safetensors"}})");
  EXPECT_EQ(open_status(d), QNT_ERR_CORRUPT_DATA);
  for (const char *name : {"/s1.safetensors", "/s2.safetensors", "/model.safetensors.index.json"})
    std::remove((d + name).c_str());
  ::rmdir(dir);
}

}  // namespace

namespace {
using namespace qnt_test;

// A GGUF file built field by field, so that each test can break one thing.
struct Gguf {
  std::string b;
  template <class V>
  Gguf &put(V v) {
    b.append(reinterpret_cast<const char *>(&v), sizeof v);
    return *this;
  }
  Gguf &str(const std::string &s) {
    put<uint64_t>(s.size());
    b += s;
    return *this;
  }
  Gguf &head(uint32_t version, uint64_t tensors, uint64_t kv) {
    b = "GGUF";
    return put(version).put(tensors).put(kv);
  }
  Gguf &tensor(const std::string &name, std::vector<uint64_t> ne, uint32_t type, uint64_t offset) {
    str(name).put<uint32_t>(static_cast<uint32_t>(ne.size()));
    for (uint64_t d : ne) put(d);
    return put(type).put(offset);
  }
  Gguf &pad(size_t align = 32) {
    while (b.size() % align != 0) b += '\0';
    return *this;
  }
};

TEST(ModelFile, GgufReadAndRefused) {
  TmpPath path("t.gguf");
  // A valid file: two keys, a Q8_0 tensor [2, 32] (ggml ne {32, 2}) and an F32 one [3].
  auto valid = [] {
    Gguf g;
    g.head(3, 2, 3);
    g.str("general.name").put<uint32_t>(8).str("tiny");
    g.str("n").put<uint32_t>(10).put<uint64_t>(uint64_t{1} << 63);
    g.str("a").put<uint32_t>(9).put<uint32_t>(6).put<uint64_t>(2).put(1.5f).put(-2.0f);
    g.tensor("w", {32, 2}, 8, 0).tensor("v", {3}, 0, 96);
    g.pad();
    std::string data(96 + 12, '\0');
    for (int r = 0; r < 2; ++r) {
      const uint16_t d = 0x3C00;  // 1.0
      std::memcpy(&data[static_cast<size_t>(34 * r)], &d, 2);
      for (int j = 0; j < 32; ++j) data[static_cast<size_t>(34 * r + 2 + j)] = static_cast<char>(j - 16);
    }
    const float v[3] = {1, 2, 3};
    std::memcpy(&data[96], v, 12);
    g.b += data;
    return g.b;
  };
  write_raw(path.p, valid());
  {
    File f;
    ASSERT_EQ(qnt_model_file_open(path.p.c_str(), &f.f), QNT_OK) << qnt_last_error_message();
    qnt_file_format fmt = 0;
    ASSERT_EQ(qnt_model_file_format(f.f, &fmt), QNT_OK);
    EXPECT_EQ(fmt, QNT_FILE_GGUF);
    const char *s = nullptr;
    ASSERT_EQ(qnt_model_file_metadata_string(f.f, "general.name", &s), QNT_OK);
    EXPECT_STREQ(s, "tiny");
    int64_t iv = 0;
    uint64_t uv = 0;
    double dv = 0;
    EXPECT_EQ(qnt_model_file_metadata_int(f.f, "n", 0, &iv), QNT_ERR_OVERFLOW);
    ASSERT_EQ(qnt_model_file_metadata_uint(f.f, "n", 0, &uv), QNT_OK);
    EXPECT_EQ(uv, uint64_t{1} << 63);
    EXPECT_EQ(qnt_model_file_metadata_string(f.f, "n", &s), QNT_ERR_DTYPE_MISMATCH);
    qnt_meta_type t = 0, e = 0;
    size_t n = 0;
    ASSERT_EQ(qnt_model_file_metadata_type(f.f, "a", &t, &e, &n), QNT_OK);
    EXPECT_EQ(t, QNT_META_ARRAY);
    EXPECT_EQ(e, QNT_META_FLOAT32);
    EXPECT_EQ(n, 2u);
    ASSERT_EQ(qnt_model_file_metadata_float(f.f, "a", 1, &dv), QNT_OK);
    EXPECT_EQ(dv, -2.0);
    EXPECT_EQ(qnt_model_file_metadata_float(f.f, "a", 2, &dv), QNT_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(qnt_model_file_metadata_int(f.f, "a", 0, &iv), QNT_ERR_DTYPE_MISMATCH);
    size_t i = 0, rank = 0;
    int64_t dims[4];
    ASSERT_EQ(qnt_model_file_tensor_find(f.f, "w", &i), QNT_OK);
    ASSERT_EQ(qnt_model_file_tensor_shape(f.f, i, dims, 4, &rank), QNT_OK);
    ASSERT_EQ(rank, 2u);
    EXPECT_EQ(dims[0], 2);
    EXPECT_EQ(dims[1], 32);
    ASSERT_EQ(qnt_model_file_tensor_type(f.f, i, &s), QNT_OK);
    EXPECT_STREQ(s, "Q8_0");
    // Dequantized, and as a qnt i8 tensor: the codes times 1.0.
    T y, q, yq;
    ASSERT_EQ(qnt_tensor_create(QNT_DTYPE_F32, dims, 2, nullptr, &y.t), QNT_OK);
    ASSERT_EQ(qnt_model_file_tensor_dequantize(f.f, i, y.t), QNT_OK) << qnt_last_error_message();
    std::vector<float> got(64);
    ASSERT_EQ(qnt_tensor_copy_to(y.t, got.data(), 256), QNT_OK);
    for (int k = 0; k < 64; ++k) EXPECT_EQ(got[static_cast<size_t>(k)], static_cast<float>(k % 32 - 16));
    ASSERT_EQ(qnt_model_file_tensor(f.f, i, &q.t), QNT_OK) << qnt_last_error_message();
    qnt_dtype d = 0;
    ASSERT_EQ(qnt_tensor_dtype(q.t, &d), QNT_OK);
    EXPECT_EQ(d, QNT_DTYPE_I8);
    ASSERT_EQ(qnt_tensor_create(QNT_DTYPE_F32, dims, 2, nullptr, &yq.t), QNT_OK);
    ASSERT_EQ(qnt_dequantize(nullptr, q.t, yq.t), QNT_OK);
    std::vector<float> got2(64);
    ASSERT_EQ(qnt_tensor_copy_to(yq.t, got2.data(), 256), QNT_OK);
    EXPECT_EQ(got, got2);
    T wrong;
    const int64_t other[2] = {32, 2};
    ASSERT_EQ(qnt_tensor_create(QNT_DTYPE_F32, other, 2, nullptr, &wrong.t), QNT_OK);
    EXPECT_EQ(qnt_model_file_tensor_dequantize(f.f, i, wrong.t), QNT_ERR_SHAPE_MISMATCH);
  }
  struct Case {
    const char *what;
    std::string file;
    qnt_status want;
  };
  auto one_key = [](uint32_t type, const std::string &value) {
    Gguf g;
    g.head(3, 0, 1).str("k").put(type);
    g.b += value;
    return g.b;
  };
  auto one_tensor = [](std::vector<uint64_t> ne, uint32_t type, uint64_t offset, size_t data) {
    Gguf g;
    g.head(3, 1, 0).tensor("t", std::move(ne), type, offset).pad();
    g.b += std::string(data, '\0');
    return g.b;
  };
  std::vector<Case> cases = {
      {"version 1", Gguf().head(1, 0, 0).b, QNT_ERR_UNSUPPORTED},
      {"big-endian", Gguf().head(0x03000000u, 0, 0).b, QNT_ERR_UNSUPPORTED},
      {"version 7", Gguf().head(7, 0, 0).b, QNT_ERR_CORRUPT_DATA},
      {"truncated header", std::string("GGUF\3\0\0\0", 8), QNT_ERR_CORRUPT_DATA},
      {"2^60 keys", Gguf().head(3, 0, uint64_t{1} << 60).b, QNT_ERR_CORRUPT_DATA},
      {"2^60 tensors", Gguf().head(3, uint64_t{1} << 60, 0).b, QNT_ERR_CORRUPT_DATA},
      {"key of 2^63 bytes", Gguf().head(3, 0, 1).put<uint64_t>(uint64_t{1} << 63).b, QNT_ERR_CORRUPT_DATA},
      {"unknown value type", one_key(13, std::string(8, '\0')), QNT_ERR_CORRUPT_DATA},
      {"bool of 2", one_key(7, std::string(1, '\2')), QNT_ERR_CORRUPT_DATA},
      {"non-UTF-8 string", one_key(8, std::string("\2\0\0\0\0\0\0\0\xff\xfe", 10)), QNT_ERR_CORRUPT_DATA},
      {"array of arrays", one_key(9, std::string("\x09\0\0\0\1\0\0\0\0\0\0\0", 12)), QNT_ERR_CORRUPT_DATA},
      {"array longer than the file", one_key(9, std::string("\x04\0\0\0\0\0\0\0\0\0\0\x10", 12)),
       QNT_ERR_CORRUPT_DATA},
      {"five dimensions", one_tensor({1, 1, 1, 1, 1}, 0, 0, 4), QNT_ERR_CORRUPT_DATA},
      {"unknown ggml type", one_tensor({4}, 99, 0, 16), QNT_ERR_CORRUPT_DATA},
      {"row not whole blocks", one_tensor({33}, 8, 0, 64), QNT_ERR_CORRUPT_DATA},
      {"misaligned offset", one_tensor({4}, 0, 4, 32), QNT_ERR_CORRUPT_DATA},
      {"data past the end", one_tensor({64}, 0, 0, 128), QNT_ERR_CORRUPT_DATA},
      {"offset past the end", one_tensor({4}, 0, uint64_t{1} << 62, 16), QNT_ERR_CORRUPT_DATA},
  };
  {
    Gguf g;  // a key twice
    g.head(3, 0, 2).str("k").put<uint32_t>(4).put<uint32_t>(1).str("k").put<uint32_t>(4).put<uint32_t>(2);
    cases.push_back({"duplicate key", g.b, QNT_ERR_CORRUPT_DATA});
    Gguf a;  // an alignment that is not a power of two
    a.head(3, 0, 1).str("general.alignment").put<uint32_t>(4).put<uint32_t>(48);
    cases.push_back({"alignment 48", a.b, QNT_ERR_CORRUPT_DATA});
    Gguf h;  // two tensors over the same bytes
    h.head(3, 2, 0).tensor("a", {8}, 0, 0).tensor("b", {8}, 0, 0).pad();
    h.b += std::string(32, '\0');
    cases.push_back({"overlap", h.b, QNT_ERR_CORRUPT_DATA});
    Gguf d;  // a tensor name twice
    d.head(3, 2, 0).tensor("a", {8}, 0, 0).tensor("a", {8}, 0, 32).pad();
    d.b += std::string(64, '\0');
    cases.push_back({"duplicate tensor", d.b, QNT_ERR_CORRUPT_DATA});
  }
  for (const Case &c : cases) {
    write_raw(path.p, c.file);
    std::string msg;
    EXPECT_EQ(open_status(path.p, &msg), c.want) << c.what << ": " << msg;
  }
}

}  // namespace

namespace {
// The scale and zero point of per-tensor qparams.
std::pair<float, int32_t> scale_zp(const qnt_qparams *qp) {
  float s = 0;
  int32_t z = 0;
  EXPECT_EQ(qnt_qparams_scales(qp, &s, 1), QNT_OK);
  EXPECT_EQ(qnt_qparams_zero_points(qp, &z, 1), QNT_OK);
  return {s, z};
}
}  // namespace

// Calibrated input qparams ("qnt:input.<name>"): written and read back with the same bits in both
// formats, over scales across float32's range; the writer's rules; malformed keys refused.
TEST(ModelFile, InputQParams) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> mant(1.0f, 2.0f);
  std::uniform_int_distribution<int> ex(-120, 120), zpu(0, 255), zpi(-128, 127);
  for (qnt_file_format fmt : {QNT_FILE_SAFETENSORS, QNT_FILE_GGUF}) {
    TmpPath path(fmt == QNT_FILE_GGUF ? "in.gguf" : "in.safetensors");
    const int n = 200;
    std::vector<float> scales(n);
    std::vector<int32_t> zps(n);
    std::vector<qnt_dtype> dts(n);
    {
      W w;
      ASSERT_EQ(qnt_model_writer_create(path.p.c_str(), fmt, &w.w), QNT_OK);
      const int64_t shape[2] = {2, 32};
      std::vector<float> zeros(64, 0.0f);
      for (int i = 0; i < n; ++i) {
        const std::string name = "layer" + std::to_string(i) + ".weight";
        ASSERT_EQ(qnt_model_writer_declare(w.w, name.c_str(), QNT_DTYPE_F32, shape, 2, nullptr), QNT_OK);
        scales[static_cast<size_t>(i)] = std::ldexp(mant(rng), ex(rng));
        const bool u = i % 3 != 0;
        dts[static_cast<size_t>(i)] = i % 3 == 0 ? QNT_DTYPE_I8 : i % 3 == 1 ? QNT_DTYPE_U8 : QNT_DTYPE_U16;
        zps[static_cast<size_t>(i)] = u ? zpu(rng) : zpi(rng);
        QP qp;
        per_tensor(qp, dts[static_cast<size_t>(i)], scales[static_cast<size_t>(i)], zps[static_cast<size_t>(i)]);
        ASSERT_EQ(qnt_model_writer_set_input_qparams(w.w, name.c_str(), qp.p), QNT_OK) << qnt_last_error_message();
        if (i == 0) {
          EXPECT_EQ(qnt_model_writer_set_input_qparams(w.w, name.c_str(), qp.p), QNT_ERR_INVALID_ARGUMENT);  // twice
        }
      }
      for (int i = 0; i < n; ++i) {
        T t;
        ASSERT_EQ(qnt_tensor_wrap(QNT_DTYPE_F32, shape, 2, nullptr, zeros.data(), 256, &t.t), QNT_OK);
        ASSERT_EQ(qnt_model_writer_write(w.w, t.t), QNT_OK) << qnt_last_error_message();
      }
      QP late;
      per_tensor(late, QNT_DTYPE_U8, 1.0f, 0);
      EXPECT_EQ(qnt_model_writer_set_input_qparams(w.w, "layer0.weight", late.p), QNT_ERR_INVALID_ARGUMENT);
      ASSERT_EQ(qnt_model_writer_finish(w.w), QNT_OK);
    }
    File f;
    ASSERT_EQ(qnt_model_file_open(path.p.c_str(), &f.f), QNT_OK) << qnt_last_error_message();
    for (int i = 0; i < n; ++i) {
      QP got;
      ASSERT_EQ(qnt_model_file_tensor_input_qparams(f.f, static_cast<size_t>(i), &got.p), QNT_OK);
      ASSERT_NE(got.p, nullptr);
      qnt_dtype d = 0;
      ASSERT_EQ(qnt_qparams_dtype(got.p, &d), QNT_OK);
      EXPECT_EQ(d, dts[static_cast<size_t>(i)]);
      const auto sz = scale_zp(got.p);
      uint32_t a = 0, b = 0;
      std::memcpy(&a, &sz.first, 4);
      std::memcpy(&b, &scales[static_cast<size_t>(i)], 4);
      EXPECT_EQ(a, b) << i;
      EXPECT_EQ(sz.second, zps[static_cast<size_t>(i)]);
    }
    QP none;
    EXPECT_EQ(qnt_model_file_tensor_input_qparams(f.f, static_cast<size_t>(n), &none.p), QNT_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(qnt_model_file_tensor_input_qparams(f.f, 0, nullptr), QNT_ERR_NULL_POINTER);
  }
  // A tensor without them gives NULL; the writer's refusals.
  TmpPath path("in2.safetensors");
  {
    W w;
    ASSERT_EQ(qnt_model_writer_create(path.p.c_str(), QNT_FILE_SAFETENSORS, &w.w), QNT_OK);
    const int64_t shape[1] = {4};
    ASSERT_EQ(qnt_model_writer_declare(w.w, "a", QNT_DTYPE_F32, shape, 1, nullptr), QNT_OK);
    QP ok, axis, nf4;
    per_tensor(ok, QNT_DTYPE_U8, 0.5f, 3);
    const float s2[2] = {1, 2};
    ASSERT_EQ(qnt_qparams_create_per_axis(QNT_DTYPE_I8, 0, 2, s2, nullptr, &axis.p), QNT_OK);
    per_tensor(nf4, QNT_DTYPE_NF4, 1.0f, 0);
    EXPECT_EQ(qnt_model_writer_set_input_qparams(w.w, "a", axis.p), QNT_ERR_UNSUPPORTED);
    EXPECT_EQ(qnt_model_writer_set_input_qparams(w.w, "a", nf4.p), QNT_ERR_UNSUPPORTED);
    EXPECT_EQ(qnt_model_writer_set_input_qparams(w.w, "", ok.p), QNT_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(qnt_model_writer_set_input_qparams(w.w, nullptr, ok.p), QNT_ERR_NULL_POINTER);
    EXPECT_EQ(qnt_model_writer_set_input_qparams(w.w, "a", nullptr), QNT_ERR_NULL_POINTER);
    EXPECT_EQ(qnt_model_writer_set_metadata(w.w, "qnt:input.a", "dtype=u8;scale=1;zero_point=0"),
              QNT_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(qnt_model_writer_set_input_qparams(w.w, "missing", ok.p), QNT_OK);  // checked at the first write
    const float v[4] = {1, 2, 3, 4};
    T t;
    ASSERT_EQ(qnt_tensor_wrap(QNT_DTYPE_F32, shape, 1, nullptr, const_cast<float *>(v), 16, &t.t), QNT_OK);
    EXPECT_EQ(qnt_model_writer_write(w.w, t.t), QNT_ERR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(qnt_last_error_message()).find("missing"), std::string::npos) << qnt_last_error_message();
  }
  {
    W w;
    ASSERT_EQ(qnt_model_writer_create(path.p.c_str(), QNT_FILE_SAFETENSORS, &w.w), QNT_OK);
    const int64_t shape[1] = {2};
    ASSERT_EQ(qnt_model_writer_declare(w.w, "a", QNT_DTYPE_F32, shape, 1, nullptr), QNT_OK);
    const float v[2] = {1, 2};
    T t;
    ASSERT_EQ(qnt_tensor_wrap(QNT_DTYPE_F32, shape, 1, nullptr, const_cast<float *>(v), 8, &t.t), QNT_OK);
    ASSERT_EQ(qnt_model_writer_write(w.w, t.t), QNT_OK);
    ASSERT_EQ(qnt_model_writer_finish(w.w), QNT_OK);
    File f;
    ASSERT_EQ(qnt_model_file_open(path.p.c_str(), &f.f), QNT_OK);
    QP none;
    none.p = reinterpret_cast<qnt_qparams *>(&w);  // overwritten with NULL
    EXPECT_EQ(qnt_model_file_tensor_input_qparams(f.f, 0, &none.p), QNT_OK);
    EXPECT_EQ(none.p, nullptr);
  }
  // Malformed keys fail the open.
  const std::string ok_entry = R"("a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})";
  const std::string eight(8, '\1');
  auto with = [&](const std::string &value) {
    return st_bytes("{\"__metadata__\":{\"qnt:input.a\":\"" + value + "\"}," + ok_entry + "}", eight);
  };
  const std::vector<std::string> bad = {
      "dtype=u8;scale=0.5",                      // a field missing
      "dtype=u8;scale=0.5;zero_point=0;x=1",     // an extra field
      "dtype=f32;scale=0.5;zero_point=0",        // not an integer dtype
      "dtype=nf4;scale=0.5;zero_point=0",        // a codebook dtype
      "dtype=u8;scale=0.5x;zero_point=0",        // not a number
      "dtype=u8;scale=;zero_point=0",            // empty
      "dtype=u8;scale=-1;zero_point=0",          // qparams refuse it
      "dtype=u8;scale=nan;zero_point=0",         //
      "dtype=u8;scale=0.5;zero_point=300",       // out of u8's range
      "dtype=u8;scale=0.5;zero_point=99999999999",  //
  };
  for (const std::string &v : bad) {
    write_raw(path.p, with(v));
    std::string msg;
    EXPECT_EQ(open_status(path.p, &msg), QNT_ERR_CORRUPT_DATA) << v << ": " << msg;
  }
  write_raw(path.p, st_bytes("{\"__metadata__\":{\"qnt:input.b\":\"dtype=u8;scale=0.5;zero_point=0\"}," + ok_entry + "}",
                             eight));
  EXPECT_EQ(open_status(path.p), QNT_ERR_CORRUPT_DATA);  // names no tensor
  write_raw(path.p, with("dtype=u8;scale=0.5;zero_point=7"));
  EXPECT_EQ(open_status(path.p), QNT_OK) << qnt_last_error_message();
}
