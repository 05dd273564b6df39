//! The header's enumerations as Rust enums, and the library-wide information functions.

use crate::error::{check, static_str, Error, ErrorKind, Result};
use crate::sys;

/// An enum over one of the header's `int32_t` enumerations, with conversions from and to the
/// raw value.
macro_rules! raw_enum {
    ($(#[$meta:meta])* $name:ident: $raw:ty { $($(#[$vmeta:meta])* $variant:ident = $value:ident,)+ }) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum $name {
            $($(#[$vmeta])* $variant,)+
        }

        impl $name {
            /// The raw value the C API takes.
            pub fn to_raw(self) -> $raw {
                match self {
                    $($name::$variant => sys::$value as $raw,)+
                }
            }

            /// The variant of a raw value, or `None` for a value this crate does not know.
            pub fn from_raw(value: $raw) -> Option<$name> {
                $(if value == sys::$value as $raw {
                    return Some($name::$variant);
                })+
                None
            }

            /// The variant of a raw value the library returned; an unknown one (from a newer
            /// library) is an error of kind [`ErrorKind::Unknown`].
            #[allow(dead_code)]
            pub(crate) fn from_library(value: $raw) -> Result<$name> {
                $name::from_raw(value).ok_or_else(|| {
                    Error::new(
                        ErrorKind::Unknown,
                        format!("the library returned {} {}, which this crate does not know",
                                stringify!($name), value),
                    )
                })
            }
        }
    };
}

raw_enum! {
    /// Element types (`qnt_dtype`). The packed ones (I4, U4, Nf4, Binary, Ternary) hold
    /// several elements per byte, element 0 in the lowest bits of byte 0.
    DType: sys::qnt_dtype {
        /// 32-bit float.
        F32 = QNT_DTYPE_F32,
        /// 32-bit signed integer.
        I32 = QNT_DTYPE_I32,
        /// 8-bit signed integer.
        I8 = QNT_DTYPE_I8,
        /// 8-bit unsigned integer.
        U8 = QNT_DTYPE_U8,
        /// 16-bit signed integer.
        I16 = QNT_DTYPE_I16,
        /// 16-bit unsigned integer.
        U16 = QNT_DTYPE_U16,
        /// 4-bit signed integer [-8, 7], two per byte.
        I4 = QNT_DTYPE_I4,
        /// 4-bit unsigned integer [0, 15], two per byte.
        U4 = QNT_DTYPE_U4,
        /// 4-bit NormalFloat code (QLoRA), two per byte.
        Nf4 = QNT_DTYPE_NF4,
        /// One bit (+1 / -1), eight per byte.
        Binary = QNT_DTYPE_BINARY,
        /// Two bits holding -1, 0, +1, four per byte.
        Ternary = QNT_DTYPE_TERNARY,
        /// IEEE binary16, for activations (since 0.7).
        F16 = QNT_DTYPE_F16,
        /// bfloat16, for activations (since 0.7).
        Bf16 = QNT_DTYPE_BF16,
        /// 4-bit logarithmic code: sign and a power of two, two per byte (since 0.11).
        Log4 = QNT_DTYPE_LOG4,
        /// 8-bit logarithmic code: sign and a power of two (since 0.11).
        Log8 = QNT_DTYPE_LOG8,
    }
}

impl DType {
    /// Bits per element (32, 8, 4, 2, 1, ...).
    ///
    /// ```
    /// assert_eq!(qnt::DType::I4.bits(), 4);
    /// ```
    pub fn bits(self) -> u32 {
        // SAFETY: a pure function of its argument.
        unsafe { sys::qnt_dtype_bits(self.to_raw()) as u32 }
    }

    /// The library's lower-case name (`"i8"`, `"nf4"`, ...).
    ///
    /// ```
    /// assert_eq!(qnt::DType::Nf4.name(), "nf4");
    /// ```
    pub fn name(self) -> &'static str {
        // SAFETY: a static string, never null.
        unsafe { static_str(sys::qnt_dtype_name(self.to_raw())) }
    }

    /// The range `(min, max)` of q for the integer dtypes (I32, I8, U8, I16, U16, I4, U4,
    /// Ternary), in which zero points must lie; an error for F32, Nf4 and Binary.
    ///
    /// ```
    /// assert_eq!(qnt::DType::U4.range()?, (0, 15));
    /// assert!(qnt::DType::F32.range().is_err());
    /// # Ok::<(), qnt::Error>(())
    /// ```
    pub fn range(self) -> Result<(i32, i32)> {
        let (mut lo, mut hi) = (0i32, 0i32);
        // SAFETY: two valid out-pointers.
        check(unsafe { sys::qnt_dtype_range(self.to_raw(), &mut lo, &mut hi) })?;
        Ok((lo, hi))
    }
}

raw_enum! {
    /// How a context chooses kernel parameters (`qnt_tuning`, since 0.11).
    Tuning: sys::qnt_tuning {
        /// The heuristic's (the default).
        Off = QNT_TUNING_OFF,
        /// The tuning table's for the shape, measured and added on a miss.
        Measure = QNT_TUNING_MEASURE,
        /// The tuning table's for the shape, the heuristic's on a miss.
        Cached = QNT_TUNING_CACHED,
    }
}

raw_enum! {
    /// What a [`crate::Recommender`]'s budget counts (`qnt_budget`).
    Budget: sys::qnt_budget {
        /// The most bytes all tensors may take together (the choice maximises the worst SQNR).
        Bytes = QNT_BUDGET_BYTES,
        /// The least SQNR in dB each tensor must keep.
        MinSqnr = QNT_BUDGET_MIN_SQNR,
    }
}

raw_enum! {
    /// Symmetric (zero point at the dtype's centre), affine (any zero point) or logarithmic
    /// parameters.
    Scheme: sys::qnt_scheme {
        /// Every zero point is the dtype's centre: 0 for signed, 2^(bits-1) for unsigned.
        Symmetric = QNT_SCHEME_SYMMETRIC,
        /// Any zero point in the dtype's range.
        Affine = QNT_SCHEME_AFFINE,
        /// The logarithmic codes of `Log4` and `Log8` (since 0.11).
        Log2 = QNT_SCHEME_LOG2,
    }
}

/// How parameters are shared over a tensor: the granularity with its axis and block size.
/// Negative axes count from the end (-1 is the last axis).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Granularity {
    /// One scale and zero point for the whole tensor.
    PerTensor,
    /// One per index along `axis` (ONNX "axis"; per output channel).
    PerAxis {
        /// The axis.
        axis: i64,
    },
    /// Along `axis`, runs of `block_size` consecutive elements share parameters.
    PerBlock {
        /// The axis the blocks run along.
        axis: i64,
        /// The elements per block (the last block may be short).
        block_size: i64,
    },
}

impl Granularity {
    /// `(qnt_granularity, axis, block_size)` as the C calls take them.
    pub(crate) fn to_raw(self) -> (sys::qnt_granularity, i64, i64) {
        match self {
            Granularity::PerTensor => (sys::QNT_GRANULARITY_PER_TENSOR as i32, 0, 0),
            Granularity::PerAxis { axis } => (sys::QNT_GRANULARITY_PER_AXIS as i32, axis, 0),
            Granularity::PerBlock { axis, block_size } => {
                (sys::QNT_GRANULARITY_PER_BLOCK as i32, axis, block_size)
            }
        }
    }
}

raw_enum! {
    /// A kernel set, for [`Context::set_max_isa`](crate::Context::set_max_isa) (`qnt_isa`).
    /// Every set gives the bits of the reference kernels: a cap changes speed only.
    Isa: sys::qnt_isa {
        /// No cap: the best the machine runs.
        Native = QNT_ISA_NATIVE,
        /// The scalar reference kernels only.
        Reference = QNT_ISA_REFERENCE,
        /// x86-64: AVX2 and FMA.
        Avx2 = QNT_ISA_AVX2,
        /// x86-64: AVX-512 F, BW, VL.
        Avx512 = QNT_ISA_AVX512,
        /// x86-64: AVX-512 with VNNI.
        Avx512Vnni = QNT_ISA_AVX512_VNNI,
        /// aarch64: Advanced SIMD.
        Neon = QNT_ISA_NEON,
        /// aarch64: with sdot / udot.
        NeonDotprod = QNT_ISA_NEON_DOTPROD,
    }
}

impl Isa {
    /// The library's name for the set (`"avx512_vnni"`).
    ///
    /// ```
    /// assert_eq!(qnt::Isa::Avx2.name(), "avx2");
    /// ```
    pub fn name(self) -> &'static str {
        // SAFETY: a static string, never null.
        unsafe { static_str(sys::qnt_isa_name(self.to_raw())) }
    }
}

raw_enum! {
    /// One CPU feature bit of [`CpuFeatures`] (`qnt_cpu_feature`).
    CpuFeature: sys::qnt_cpu_feature {
        /// SSE 4.1.
        Sse41 = QNT_CPU_SSE41,
        /// AVX2.
        Avx2 = QNT_CPU_AVX2,
        /// FMA3.
        Fma = QNT_CPU_FMA,
        /// AVX-512 F.
        Avx512F = QNT_CPU_AVX512F,
        /// AVX-512 BW.
        Avx512Bw = QNT_CPU_AVX512BW,
        /// AVX-512 VL.
        Avx512Vl = QNT_CPU_AVX512VL,
        /// AVX-512 VNNI.
        Avx512Vnni = QNT_CPU_AVX512VNNI,
        /// AVX-VNNI (VEX encoded).
        AvxVnni = QNT_CPU_AVXVNNI,
        /// AMX-INT8 (with the OS's permission).
        AmxInt8 = QNT_CPU_AMXINT8,
        /// AVX-512 VPOPCNTDQ (since 0.11.5).
        Avx512Vpopcntdq = QNT_CPU_AVX512VPOPCNTDQ,
        /// Advanced SIMD (aarch64).
        Neon = QNT_CPU_NEON,
        /// sdot / udot (aarch64).
        Dotprod = QNT_CPU_DOTPROD,
        /// The int8 matrix multiply (aarch64).
        I8mm = QNT_CPU_I8MM,
    }
}

impl CpuFeature {
    /// Every feature this crate knows, in bit order.
    pub const ALL: [CpuFeature; 13] = [
        CpuFeature::Sse41,
        CpuFeature::Avx2,
        CpuFeature::Fma,
        CpuFeature::Avx512F,
        CpuFeature::Avx512Bw,
        CpuFeature::Avx512Vl,
        CpuFeature::Avx512Vnni,
        CpuFeature::AvxVnni,
        CpuFeature::AmxInt8,
        CpuFeature::Avx512Vpopcntdq,
        CpuFeature::Neon,
        CpuFeature::Dotprod,
        CpuFeature::I8mm,
    ];

    /// The library's name for the feature (`"avx512vnni"`).
    ///
    /// ```
    /// assert_eq!(qnt::CpuFeature::Avx2.name(), "avx2");
    /// ```
    pub fn name(self) -> &'static str {
        // SAFETY: a static string, never null.
        unsafe { static_str(sys::qnt_cpu_feature_name(self.to_raw())) }
    }
}

/// The CPU features a context detected, as the header's bit mask.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CpuFeatures(pub u64);

impl CpuFeatures {
    /// Whether `feature` is there (supported by both the CPU and the operating system).
    pub fn contains(self, feature: CpuFeature) -> bool {
        self.0 & u64::from(feature.to_raw()) != 0
    }

    /// The features that are there, among those this crate knows.
    pub fn iter(self) -> impl Iterator<Item = CpuFeature> {
        CpuFeature::ALL
            .into_iter()
            .filter(move |f| self.contains(*f))
    }
}

raw_enum! {
    /// Where a tensor's storage lives (DLPack's device types).
    DeviceType: sys::qnt_device_type {
        /// Host memory.
        Cpu = QNT_DEVICE_CPU,
        /// CUDA device memory.
        Cuda = QNT_DEVICE_CUDA,
    }
}

raw_enum! {
    /// Which operator a [`Prepared`](crate::Prepared) is.
    PreparedKind: sys::qnt_prepared_kind {
        /// [`Prepared::matmul`](crate::Prepared::matmul).
        Matmul = QNT_PREPARED_MATMUL,
        /// [`Prepared::linear_dynamic`](crate::Prepared::linear_dynamic).
        LinearDynamic = QNT_PREPARED_LINEAR_DYNAMIC,
        /// [`Prepared::linear_static`](crate::Prepared::linear_static).
        LinearStatic = QNT_PREPARED_LINEAR_STATIC,
        /// [`Prepared::linear_weight_only`](crate::Prepared::linear_weight_only).
        LinearWeightOnly = QNT_PREPARED_LINEAR_WEIGHT_ONLY,
        /// [`Prepared::conv2d`](crate::Prepared::conv2d).
        Conv2d = QNT_PREPARED_CONV2D,
        /// [`Prepared::binary_matmul`](crate::Prepared::binary_matmul).
        BinaryMatmul = QNT_PREPARED_BINARY_MATMUL,
    }
}

raw_enum! {
    /// A calibration method of [`Calibrator`](crate::Calibrator) (see the header for each
    /// one's exact rule).
    CalibMethod: sys::qnt_calib_method {
        /// PyTorch's MinMaxObserver.
        MinMax = QNT_CALIB_MINMAX,
        /// PyTorch's MovingAverageMinMaxObserver (cannot be merged).
        MovingAverage = QNT_CALIB_MOVING_AVERAGE,
        /// Clips at a percentile of |x|.
        Percentile = QNT_CALIB_PERCENTILE,
        /// TensorRT's entropy (KL divergence) calibration.
        Entropy = QNT_CALIB_ENTROPY,
        /// The range with the smallest expected squared error.
        Mse = QNT_CALIB_MSE,
        /// The best of min-max, percentile, entropy and MSE.
        Adaptive = QNT_CALIB_ADAPTIVE,
    }
}

raw_enum! {
    /// An option of a [`Calibrator`](crate::Calibrator), set before the first batch.
    CalibOption: sys::qnt_calib_option {
        /// Moving average's constant, in (0, 1]; default 0.01.
        Averaging = QNT_CALIB_OPT_AVERAGING,
        /// In (50, 100]; default 99.99.
        Percentile = QNT_CALIB_OPT_PERCENTILE,
        /// Histogram bins on each side of 0, a power of two in [128, 65536]; default 2048.
        Bins = QNT_CALIB_OPT_BINS,
        /// PyTorch's quant_min.
        QuantMin = QNT_CALIB_OPT_QUANT_MIN,
        /// PyTorch's quant_max.
        QuantMax = QNT_CALIB_OPT_QUANT_MAX,
    }
}

raw_enum! {
    /// An option key of an [`OpDesc`](crate::OpDesc) (`qnt_op_option`).
    OpOption: sys::qnt_op_option {
        /// Convolution stride along H (>= 1).
        StrideH = QNT_OP_STRIDE_H,
        /// Convolution stride along W (>= 1).
        StrideW = QNT_OP_STRIDE_W,
        /// Padding above (>= 0).
        PadTop = QNT_OP_PAD_TOP,
        /// Padding on the left (>= 0).
        PadLeft = QNT_OP_PAD_LEFT,
        /// Padding below (>= 0).
        PadBottom = QNT_OP_PAD_BOTTOM,
        /// Padding on the right (>= 0).
        PadRight = QNT_OP_PAD_RIGHT,
        /// Dilation along H (>= 1).
        DilationH = QNT_OP_DILATION_H,
        /// Dilation along W (>= 1).
        DilationW = QNT_OP_DILATION_W,
        /// Convolution groups (>= 1).
        Groups = QNT_OP_GROUPS,
        /// 0 or 1: a ReLU fused into the output.
        FuseRelu = QNT_OP_FUSE_RELU,
        /// An [`ActQuant`] value.
        ActQuant = QNT_OP_ACT_QUANT,
        /// 0 or 1: activations quantized to [0, 127].
        ReduceRange = QNT_OP_REDUCE_RANGE,
        /// A [`Layout`] value.
        Layout = QNT_OP_LAYOUT,
        /// A [`WeightOnlyMode`] value.
        WeightOnlyMode = QNT_OP_WEIGHT_ONLY_MODE,
    }
}

raw_enum! {
    /// How the weight-only linear layer computes.
    WeightOnlyMode: sys::qnt_weight_only_mode {
        /// Every weight dequantized to f32; float dot products in the header's fixed order.
        F32 = QNT_WEIGHT_ONLY_F32,
        /// Activations quantized to int8 per row and weight block; integer dot products per
        /// block (W4A8, W8A8).
        Int8Act = QNT_WEIGHT_ONLY_INT8_ACT,
        /// Ternary or binary weights, activations quantized to int8 per row by absmax, one exact
        /// int32 dot product per output (BitNet b1.58; since 0.9).
        Int8Token = QNT_WEIGHT_ONLY_INT8_TOKEN,
        /// Int8Act's activations and weights, one exact int32 dot product per block and one
        /// float sum per output: the mode for batches (since 0.12).
        Int8Block = QNT_WEIGHT_ONLY_INT8_BLOCK,
    }
}

raw_enum! {
    /// The memory layout of a convolution's activations.
    Layout: sys::qnt_layout {
        /// x [N, C, H, W], y [N, M, OH, OW].
        Nchw = QNT_LAYOUT_NCHW,
        /// x [N, H, W, C], y [N, OH, OW, M] (channels last).
        Nhwc = QNT_LAYOUT_NHWC,
    }
}

raw_enum! {
    /// How the dynamic linear layer quantizes its activations at run time.
    ActQuant: sys::qnt_act_quant {
        /// One DynamicQuantizeLinear over the whole input.
        PerTensor = QNT_ACT_PER_TENSOR,
        /// One per row of K values.
        PerRow = QNT_ACT_PER_ROW,
    }
}

/// The version of the library loaded at run time, as `MAJOR * 10000 + MINOR * 100 + PATCH`.
///
/// ```
/// assert_eq!(qnt::version() / 100, qnt::sys::QNT_VERSION_NUMBER / 100);
/// ```
pub fn version() -> u32 {
    // SAFETY: no arguments, no state.
    unsafe { sys::qnt_version() }
}

/// The version of the library loaded at run time as `"MAJOR.MINOR.PATCH"`.
pub fn version_string() -> &'static str {
    // SAFETY: a static string, never null.
    unsafe { static_str(sys::qnt_version_string()) }
}

/// The ABI version of the library loaded at run time.
pub fn abi_version() -> u32 {
    // SAFETY: no arguments, no state.
    unsafe { sys::qnt_abi_version() }
}

/// Checks that the library loaded at run time speaks the ABI these bindings were generated for
/// (`QNT_ABI_CHECK()`); the error's message names both versions.
///
/// ```
/// qnt::abi_check()?;
/// # Ok::<(), qnt::Error>(())
/// ```
pub fn abi_check() -> Result<()> {
    // SAFETY: a plain value.
    check(unsafe { sys::qnt_abi_check(sys::QNT_ABI_VERSION) })
}

/// How the library was built, one `key=value` per line, with the kernels an uncapped context
/// chooses on this machine.
///
/// ```
/// assert!(qnt::build_info().contains("version="));
/// ```
pub fn build_info() -> &'static str {
    // SAFETY: a static string, never null.
    unsafe { static_str(sys::qnt_build_info()) }
}

/// The 16 values of the NF4 codebook (bitsandbytes' constants), ascending from -1 to 1.
///
/// ```
/// let book = qnt::nf4_codebook();
/// assert_eq!((book[0], book[7], book[15]), (-1.0, 0.0, 1.0));
/// ```
pub fn nf4_codebook() -> [f32; 16] {
    let mut out = [0f32; 16];
    // SAFETY: out holds 16 floats, the capacity passed.
    let status = unsafe { sys::qnt_nf4_codebook(out.as_mut_ptr(), out.len()) };
    debug_assert_eq!(status, sys::QNT_OK as i32);
    out
}
