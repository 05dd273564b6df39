//! Tensors: dense, row-major, owned by the library or borrowed from the caller.

use crate::error::{check, create, out, Error, ErrorKind, Result};
use crate::context::{ctx_ptr, Context};
use crate::qparams::QParams;
use crate::sys;
use crate::types::{DType, DeviceType};
use std::ffi::c_void;
use std::marker::PhantomData;
use std::ptr::{self, NonNull};

mod sealed {
    pub trait Sealed {}
}

/// A Rust element type with a qnt dtype of whole bytes: `f32`, `i32`, `i8`, `u8`, `i16`, `u16`.
/// The packed dtypes (I4, U4, Nf4, Binary, Ternary) go through bytes instead
/// ([`Tensor::from_bytes`], [`Tensor::wrap_bytes`], [`Tensor::to_bytes`]).
pub trait Element: sealed::Sealed + Copy + Default + 'static {
    /// The dtype of this element type.
    const DTYPE: DType;
}

macro_rules! element {
    ($($t:ty => $d:ident),+) => {$(
        impl sealed::Sealed for $t {}
        impl Element for $t {
            const DTYPE: DType = DType::$d;
        }
    )+};
}
element!(f32 => F32, i32 => I32, i8 => I8, u8 => U8, i16 => I16, u16 => U16);

fn qparams_ptr(qparams: Option<&QParams>) -> *const sys::qnt_qparams {
    qparams.map_or(ptr::null(), QParams::as_ptr)
}

fn element_count(shape: &[i64]) -> Option<usize> {
    shape
        .iter()
        .try_fold(1usize, |n, &d| n.checked_mul(usize::try_from(d).ok()?))
}

fn check_len<T: Element>(data: &[T], shape: &[i64]) -> Result<()> {
    match element_count(shape) {
        Some(n) if n == data.len() => Ok(()),
        _ => Err(Error::new(
            ErrorKind::ShapeMismatch,
            format!("{} elements for the shape {:?}", data.len(), shape),
        )),
    }
}

/// A dense, row-major tensor (`qnt_tensor`): f32 data, or quantized data with its
/// [`QParams`].
///
/// `Tensor<'static>` owns its storage (allocated by the library, 64-byte aligned). A tensor made
/// by [`Tensor::wrap`] or [`Tensor::wrap_bytes`] borrows the caller's memory for `'a`: ops write
/// their outputs straight into it, and the borrow checker keeps the tensor from outliving it:
///
/// ```compile_fail,E0597
/// let t;
/// {
///     let mut buf = vec![0f32; 4];
///     t = qnt::Tensor::wrap(&mut buf, &[4], None).unwrap();
/// } // `buf` dropped here while still borrowed
/// drop(t);
/// ```
///
/// ```
/// use qnt::{Context, DType, QParams, Tensor};
/// let ctx = Context::new()?;
/// let x = Tensor::from_slice(&[0.0f32, 0.5, -1.0, 2.0], &[2, 2], None)?;
/// let qp = QParams::per_tensor(DType::I8, 0.5, 0)?;
/// let mut q = Tensor::zeros(DType::I8, &[2, 2], Some(&qp))?;
/// ctx.quantize(&x, &mut q)?;
/// assert_eq!(q.to_vec::<i8>()?, vec![0, 1, -2, 4]);
///
/// // Sub-byte dtypes take and give their packed bytes: int4, element 0 in the low nibble.
/// let qp4 = QParams::per_tensor(DType::I4, 0.5, 0)?;
/// let mut q4 = Tensor::zeros(DType::I4, &[4], Some(&qp4))?;
/// ctx.quantize(&Tensor::from_slice(&[0.5f32, -0.5, 3.5, -4.0], &[4], None)?, &mut q4)?;
/// assert_eq!(q4.to_bytes()?, vec![0xF1, 0x87]);
/// # Ok::<(), qnt::Error>(())
/// ```
#[derive(Debug)]
pub struct Tensor<'a> {
    raw: NonNull<sys::qnt_tensor>,
    _borrow: PhantomData<&'a mut [u8]>,
}

// SAFETY: the handle has no thread affinity; a tensor borrowing memory is as Send as the
// `&'a mut [u8]` it stands for.
unsafe impl Send for Tensor<'_> {}
// SAFETY: the header: "several threads may read a tensor at once"; every `&self` method reads,
// and a call that writes a tensor (an op's output) takes `&mut Tensor`.
unsafe impl Sync for Tensor<'_> {}

impl<'a> Tensor<'a> {
    pub(crate) fn from_handle(raw: NonNull<sys::qnt_tensor>) -> Tensor<'a> {
        Tensor {
            raw,
            _borrow: PhantomData,
        }
    }

    /// The raw handle, for the [`sys`](crate::sys) functions; it stays owned by `self`.
    pub fn as_ptr(&self) -> *const sys::qnt_tensor {
        self.raw.as_ptr()
    }

    /// The raw handle for calls that write the tensor.
    pub fn as_mut_ptr(&mut self) -> *mut sys::qnt_tensor {
        self.raw.as_ptr()
    }

    /// A tensor over `data`, borrowed for `'a` (`qnt_tensor_wrap`): `data.len()` must be the
    /// shape's element count, and the dtype is `T`'s (so f32, i32, i8, u8, i16 or u16).
    ///
    /// ```
    /// let mut buf = [1.5f32, -2.0];
    /// let t = qnt::Tensor::wrap(&mut buf, &[2], None)?;
    /// assert_eq!(t.as_slice::<f32>()?, &[1.5, -2.0]);
    /// # Ok::<(), qnt::Error>(())
    /// ```
    pub fn wrap<T: Element>(
        data: &'a mut [T],
        shape: &[i64],
        qparams: Option<&QParams>,
    ) -> Result<Tensor<'a>> {
        check_len(data, shape)?;
        let bytes = std::mem::size_of_val(data);
        // SAFETY: data is valid and exclusively borrowed for 'a, which the tensor cannot outlive.
        create("tensor", |out| unsafe {
            sys::qnt_tensor_wrap(
                T::DTYPE.to_raw(),
                shape.as_ptr(),
                shape.len(),
                qparams_ptr(qparams),
                data.as_mut_ptr().cast::<c_void>(),
                bytes,
                out,
            )
        })
        .map(Tensor::from_handle)
    }

    /// A tensor of any dtype over the bytes of `data`, borrowed for `'a`; `data.len()` must be
    /// the tensor's byte size (packed dtypes: `ceil(elements * bits / 8)`), and 16- and 32-bit
    /// dtypes need `data` aligned to their element size.
    pub fn wrap_bytes(
        dtype: DType,
        shape: &[i64],
        data: &'a mut [u8],
        qparams: Option<&QParams>,
    ) -> Result<Tensor<'a>> {
        let bytes = data.len();
        // SAFETY: data is valid and exclusively borrowed for 'a, which the tensor cannot outlive.
        let t = create("tensor", |out| unsafe {
            sys::qnt_tensor_wrap(
                dtype.to_raw(),
                shape.as_ptr(),
                shape.len(),
                qparams_ptr(qparams),
                data.as_mut_ptr().cast::<c_void>(),
                bytes,
                out,
            )
        })
        .map(Tensor::from_handle)?;
        t.expect_byte_size(bytes)?;
        Ok(t)
    }

    fn expect_byte_size(&self, given: usize) -> Result<()> {
        let size = self.byte_size()?;
        if size == given {
            Ok(())
        } else {
            Err(Error::new(
                ErrorKind::ShapeMismatch,
                format!("{given} bytes for a tensor of {size} bytes"),
            ))
        }
    }

    /// The element dtype.
    pub fn dtype(&self) -> Result<DType> {
        // SAFETY: a live handle and a valid out-pointer.
        let v = out(|v| unsafe { sys::qnt_tensor_dtype(self.as_ptr(), v) })?;
        DType::from_library(v)
    }

    /// The number of dimensions.
    pub fn rank(&self) -> Result<usize> {
        // SAFETY: a live handle and a valid out-pointer.
        let v = out(|v| unsafe { sys::qnt_tensor_rank(self.as_ptr(), v) })?;
        Ok(v)
    }

    /// The dimensions.
    pub fn shape(&self) -> Result<Vec<i64>> {
        let mut v = vec![0i64; self.rank()?];
        // SAFETY: v holds rank values, the capacity passed.
        check(unsafe { sys::qnt_tensor_shape(self.as_ptr(), v.as_mut_ptr(), v.len()) })?;
        Ok(v)
    }

    /// The number of elements.
    pub fn element_count(&self) -> Result<usize> {
        // SAFETY: a live handle and a valid out-pointer.
        let v = out(|v| unsafe { sys::qnt_tensor_element_count(self.as_ptr(), v) })?;
        Ok(v)
    }

    /// The storage size in bytes, `ceil(elements * bits / 8)`.
    pub fn byte_size(&self) -> Result<usize> {
        // SAFETY: a live handle and a valid out-pointer.
        let v = out(|v| unsafe { sys::qnt_tensor_byte_size(self.as_ptr(), v) })?;
        Ok(v)
    }

    /// The tensor's quantization parameters (a new reference), or `None` when it has none.
    pub fn qparams(&self) -> Result<Option<QParams>> {
        // SAFETY: a live handle and a valid out-pointer; the reference returned is ours.
        let raw = out(|p| unsafe { sys::qnt_tensor_qparams(self.as_ptr(), p) })?;
        Ok(NonNull::new(raw).map(QParams::from_handle))
    }

    /// Where the storage lives: device type and index (every tensor of this release is on the
    /// CPU).
    pub fn device(&self) -> Result<(DeviceType, i32)> {
        let (mut ty, mut id) = (0, 0);
        // SAFETY: a live handle and valid out-pointers.
        check(unsafe { sys::qnt_tensor_device(self.as_ptr(), &mut ty, &mut id) })?;
        Ok((DeviceType::from_library(ty)?, id))
    }

    /// Whether the tensor may not be written (imported from a read-only DLPack tensor); ops
    /// refuse it as an output.
    pub fn is_read_only(&self) -> Result<bool> {
        // SAFETY: a live handle and a valid out-pointer.
        let v = out(|v| unsafe { sys::qnt_tensor_is_read_only(self.as_ptr(), v) })?;
        Ok(v != 0)
    }

    /// A copy of the storage's bytes (packed dtypes in their packed layout).
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        let mut v = vec![0u8; self.byte_size()?];
        // SAFETY: v holds byte_size bytes, the capacity passed.
        check(unsafe {
            sys::qnt_tensor_copy_to(self.as_ptr(), v.as_mut_ptr().cast::<c_void>(), v.len())
        })?;
        Ok(v)
    }

    /// A copy of the elements; `T` must be the tensor's dtype.
    pub fn to_vec<T: Element>(&self) -> Result<Vec<T>> {
        self.expect_dtype(T::DTYPE)?;
        let mut v = vec![T::default(); self.element_count()?];
        // SAFETY: v holds element_count elements of the tensor's dtype: byte_size bytes.
        check(unsafe {
            sys::qnt_tensor_copy_to(
                self.as_ptr(),
                v.as_mut_ptr().cast::<c_void>(),
                std::mem::size_of_val(v.as_slice()),
            )
        })?;
        Ok(v)
    }

    /// Overwrites the elements with `src`, which has exactly the tensor's element count and
    /// dtype.
    pub fn copy_from_slice<T: Element>(&mut self, src: &[T]) -> Result<()> {
        self.expect_dtype(T::DTYPE)?;
        let n = self.element_count()?;
        if src.len() != n {
            return Err(Error::new(
                ErrorKind::ShapeMismatch,
                format!("{} elements for a tensor of {n}", src.len()),
            ));
        }
        // SAFETY: src holds the tensor's byte size and cannot overlap it (it is borrowed
        // shared while the tensor is borrowed exclusively).
        check(unsafe {
            sys::qnt_tensor_copy_from(
                self.as_mut_ptr(),
                src.as_ptr().cast::<c_void>(),
                std::mem::size_of_val(src),
            )
        })
    }

    /// Overwrites the storage with `src`, exactly the tensor's byte size (packed dtypes in their
    /// packed layout; the unused bits of the last byte are written as 0).
    pub fn copy_from_bytes(&mut self, src: &[u8]) -> Result<()> {
        self.expect_byte_size(src.len())?;
        // SAFETY: src holds the tensor's byte size and cannot overlap it.
        check(unsafe {
            sys::qnt_tensor_copy_from(self.as_mut_ptr(), src.as_ptr().cast::<c_void>(), src.len())
        })
    }

    fn expect_dtype(&self, want: DType) -> Result<()> {
        let have = self.dtype()?;
        if have == want {
            Ok(())
        } else {
            Err(Error::new(
                ErrorKind::DtypeMismatch,
                format!("the tensor is {}, not {}", have.name(), want.name()),
            ))
        }
    }

    /// The storage pointer and byte size, checked to be host memory.
    fn host_storage(&self) -> Result<(*mut u8, usize)> {
        let (device, _) = self.device()?;
        if device != DeviceType::Cpu {
            return Err(Error::new(
                ErrorKind::Unsupported,
                "the tensor is not in host memory",
            ));
        }
        let mut data = ptr::null_mut();
        // SAFETY: qnt_tensor_data only reads the handle (it takes a non-const pointer so that
        // the caller may write through the result).
        check(unsafe { sys::qnt_tensor_data(self.raw.as_ptr(), &mut data) })?;
        Ok((data.cast::<u8>(), self.byte_size()?))
    }

    /// Copies `src`'s bytes into this tensor, across devices too (`qnt_tensor_copy`): same
    /// dtype and shape. With a context bound to a CUDA stream the copy is ordered on it.
    pub fn copy_from_tensor(&mut self, ctx: &Context, src: &Tensor<'_>) -> Result<()> {
        // SAFETY: both handles are valid; the library checks dtypes, shapes and overlap.
        check(unsafe { sys::qnt_tensor_copy(ctx_ptr(ctx), src.as_ptr(), self.as_mut_ptr()) })
    }

    /// The storage's bytes, borrowed.
    pub fn as_bytes(&self) -> Result<&[u8]> {
        let (p, n) = self.host_storage()?;
        if n == 0 {
            return Ok(&[]);
        }
        // SAFETY: p points at n bytes of host storage that live as long as the tensor; no
        // `&mut` access can exist while `self` is borrowed.
        Ok(unsafe { std::slice::from_raw_parts(p, n) })
    }

    /// The storage's bytes, borrowed for writing (not for a read-only tensor).
    pub fn as_bytes_mut(&mut self) -> Result<&mut [u8]> {
        if self.is_read_only()? {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                "the tensor is read-only",
            ));
        }
        let (p, n) = self.host_storage()?;
        if n == 0 {
            return Ok(&mut []);
        }
        // SAFETY: as as_bytes, and `self` is borrowed exclusively.
        Ok(unsafe { std::slice::from_raw_parts_mut(p, n) })
    }

    /// The elements, borrowed; `T` must be the tensor's dtype.
    pub fn as_slice<T: Element>(&self) -> Result<&[T]> {
        self.expect_dtype(T::DTYPE)?;
        let n = self.element_count()?;
        let (p, _) = self.host_storage()?;
        if n == 0 {
            return Ok(&[]);
        }
        // SAFETY: the library aligns storage to the element size (its own 64-byte allocations,
        // and the alignment check of wrap and DLPack import), and it holds n elements of T.
        debug_assert_eq!(p as usize % std::mem::align_of::<T>(), 0);
        Ok(unsafe { std::slice::from_raw_parts(p.cast::<T>(), n) })
    }

    /// The elements, borrowed for writing; `T` must be the tensor's dtype.
    pub fn as_mut_slice<T: Element>(&mut self) -> Result<&mut [T]> {
        self.expect_dtype(T::DTYPE)?;
        let n = self.element_count()?;
        let bytes = self.as_bytes_mut()?;
        if n == 0 {
            return Ok(&mut []);
        }
        // SAFETY: as as_slice, and `self` is borrowed exclusively.
        Ok(unsafe { std::slice::from_raw_parts_mut(bytes.as_mut_ptr().cast::<T>(), n) })
    }

    /// Exports the tensor as a DLPack tensor without copying (`qnt_tensor_to_dlpack`). The
    /// export borrows `self` exclusively for as long as it lives, since its consumer may read
    /// and write the storage.
    pub fn to_dlpack(&mut self, versioned: bool) -> Result<DlPack<'_>> {
        export(self.raw.as_ptr(), versioned)
    }

    /// Exports the tensor and gives up this handle; the export keeps the storage alive (for a
    /// borrowing tensor, the caller's memory, for `'a`).
    ///
    /// ```
    /// let t = qnt::Tensor::from_slice(&[1i8, 2, 3], &[3], None)?;
    /// let exported = t.into_dlpack(true)?;
    /// assert_eq!(exported.shape(), &[3]);
    /// let back = qnt::Tensor::from_dlpack(exported, None)?; // the same memory, imported again
    /// assert_eq!(back.to_vec::<i8>()?, vec![1, 2, 3]);
    /// # Ok::<(), qnt::Error>(())
    /// ```
    pub fn into_dlpack(self, versioned: bool) -> Result<DlPack<'a>> {
        export(self.raw.as_ptr(), versioned)
        // `self` drops here: the export holds its own reference to the storage.
    }

    /// Imports a DLPack tensor without copying (`qnt_tensor_from_dlpack`). On failure the
    /// DLPack tensor is released (its deleter called).
    pub fn from_dlpack(dl: DlPack<'a>, qparams: Option<&QParams>) -> Result<Tensor<'a>> {
        // SAFETY: dl is a live managed tensor we own; on success qnt takes it over.
        let raw = create("tensor", |out| unsafe {
            sys::qnt_tensor_from_dlpack(
                dl.ptr.as_ptr(),
                i32::from(dl.versioned),
                qparams_ptr(qparams),
                out,
            )
        })?;
        std::mem::forget(dl);
        Ok(Tensor::from_handle(raw))
    }
}

impl Tensor<'static> {
    /// A zero-filled tensor allocated on a device (`qnt_tensor_create_on_device`): the CPU
    /// (device 0), or CUDA device `device`. Without a CUDA device this is an error of kind
    /// [`ErrorKind::NoDevice`]. Device storage is reached through copies
    /// ([`Tensor::copy_from_tensor`], [`Tensor::to_bytes`], [`Tensor::copy_from_bytes`]), never
    /// as a slice.
    ///
    /// ```
    /// # use qnt::{DType, DeviceType, ErrorKind, Tensor};
    /// match Tensor::zeros_on(DType::F16, &[2, 3], None, DeviceType::Cuda, 0) {
    ///     Ok(t) => assert_eq!(t.device().unwrap(), (DeviceType::Cuda, 0)),
    ///     Err(e) => assert_eq!(e.kind(), ErrorKind::NoDevice),
    /// }
    /// ```
    pub fn zeros_on(
        dtype: DType,
        shape: &[i64],
        qparams: Option<&QParams>,
        device_type: DeviceType,
        device: i32,
    ) -> Result<Tensor<'static>> {
        // SAFETY: shape holds shape.len() values; valid out-pointer.
        create("tensor", |out| unsafe {
            sys::qnt_tensor_create_on_device(
                dtype.to_raw(),
                shape.as_ptr(),
                shape.len(),
                qparams_ptr(qparams),
                device_type.to_raw(),
                device,
                out,
            )
        })
        .map(Tensor::from_handle)
    }

    /// A tensor over memory of a device that the caller owns (`qnt_tensor_wrap_device`), such
    /// as a CUDA allocation of another framework.
    ///
    /// # Safety
    /// `data` must point at `data_bytes` bytes of memory of that device, valid and not used
    /// elsewhere in a conflicting way for as long as the tensor lives.
    pub unsafe fn wrap_device(
        dtype: DType,
        shape: &[i64],
        qparams: Option<&QParams>,
        device_type: DeviceType,
        device: i32,
        data: *mut c_void,
        data_bytes: usize,
    ) -> Result<Tensor<'static>> {
        create("tensor", |out| {
            sys::qnt_tensor_wrap_device(
                dtype.to_raw(),
                shape.as_ptr(),
                shape.len(),
                qparams_ptr(qparams),
                device_type.to_raw(),
                device,
                data,
                data_bytes,
                out,
            )
        })
        .map(Tensor::from_handle)
    }

    /// A zero-filled tensor whose storage the library allocates (`qnt_tensor_create`).
    /// Quantized dtypes take their parameters here (they are needed by quantize and the ops).
    pub fn zeros(
        dtype: DType,
        shape: &[i64],
        qparams: Option<&QParams>,
    ) -> Result<Tensor<'static>> {
        // SAFETY: shape holds shape.len() values; valid out-pointer.
        create("tensor", |out| unsafe {
            sys::qnt_tensor_create(
                dtype.to_raw(),
                shape.as_ptr(),
                shape.len(),
                qparams_ptr(qparams),
                out,
            )
        })
        .map(Tensor::from_handle)
    }

    /// A tensor holding a copy of `data` (`qnt_tensor_create_from_data`); `data.len()` must be
    /// the shape's element count, and the dtype is `T`'s.
    pub fn from_slice<T: Element>(
        data: &[T],
        shape: &[i64],
        qparams: Option<&QParams>,
    ) -> Result<Tensor<'static>> {
        check_len(data, shape)?;
        Tensor::create_from(
            T::DTYPE,
            shape,
            data.as_ptr().cast::<c_void>(),
            std::mem::size_of_val(data),
            qparams,
        )
    }

    /// A tensor of any dtype holding a copy of `data`, exactly its byte size (packed dtypes in
    /// their packed layout: element 0 in the lowest bits of byte 0).
    pub fn from_bytes(
        dtype: DType,
        shape: &[i64],
        data: &[u8],
        qparams: Option<&QParams>,
    ) -> Result<Tensor<'static>> {
        let t = Tensor::create_from(
            dtype,
            shape,
            data.as_ptr().cast::<c_void>(),
            data.len(),
            qparams,
        )?;
        t.expect_byte_size(data.len())?;
        Ok(t)
    }

    fn create_from(
        dtype: DType,
        shape: &[i64],
        data: *const c_void,
        bytes: usize,
        qparams: Option<&QParams>,
    ) -> Result<Tensor<'static>> {
        // SAFETY: data holds `bytes` bytes, which the library copies.
        create("tensor", |out| unsafe {
            sys::qnt_tensor_create_from_data(
                dtype.to_raw(),
                shape.as_ptr(),
                shape.len(),
                qparams_ptr(qparams),
                data,
                bytes,
                out,
            )
        })
        .map(Tensor::from_handle)
    }

    /// Imports a DLPack tensor from a foreign producer (NumPy, PyTorch, ...) without copying.
    ///
    /// # Safety
    /// `managed` must point at a live `DLManagedTensor` (`versioned == false`) or
    /// `DLManagedTensorVersioned` (`versioned == true`) whose memory stays valid until its
    /// deleter is called. On success qnt owns it and calls its deleter once; on failure it is
    /// left alone and still the caller's.
    pub unsafe fn from_dlpack_raw(
        managed: *mut c_void,
        versioned: bool,
        qparams: Option<&QParams>,
    ) -> Result<Tensor<'static>> {
        create("tensor", |out| {
            sys::qnt_tensor_from_dlpack(managed, i32::from(versioned), qparams_ptr(qparams), out)
        })
        .map(Tensor::from_handle)
    }
}

impl Drop for Tensor<'_> {
    fn drop(&mut self) {
        // SAFETY: this owns the handle; borrowed memory is left alone by the library.
        unsafe { sys::qnt_tensor_destroy(self.raw.as_ptr()) }
    }
}

fn export<'a>(t: *mut sys::qnt_tensor, versioned: bool) -> Result<DlPack<'a>> {
    // SAFETY: a live handle and a valid out-pointer.
    let ptr = create("DLPack tensor", |out| unsafe {
        sys::qnt_tensor_to_dlpack(t, i32::from(versioned), out)
    })?;
    Ok(DlPack {
        ptr,
        versioned,
        _borrow: PhantomData,
    })
}

// DLPack's structs (dlpack.h, v1.0 and the legacy form), as far as this crate reads them.
#[repr(C)]
struct DLTensor {
    data: *mut c_void,
    device: [i32; 2],
    ndim: i32,
    dtype: [u8; 4],
    shape: *mut i64,
    strides: *mut i64,
    byte_offset: u64,
}

#[repr(C)]
struct DLManagedTensor {
    dl_tensor: DLTensor,
    manager_ctx: *mut c_void,
    deleter: Option<unsafe extern "C" fn(*mut DLManagedTensor)>,
}

#[repr(C)]
struct DLManagedTensorVersioned {
    version: [u32; 2],
    manager_ctx: *mut c_void,
    deleter: Option<unsafe extern "C" fn(*mut DLManagedTensorVersioned)>,
    flags: u64,
    dl_tensor: DLTensor,
}

/// A DLPack tensor exported by [`Tensor::to_dlpack`] or [`Tensor::into_dlpack`]: a
/// `DLManagedTensor` or `DLManagedTensorVersioned` that this value owns. Dropping it calls its
/// deleter; [`DlPack::into_raw`] hands it to a foreign consumer instead, and
/// [`Tensor::from_dlpack`] imports it back.
#[derive(Debug)]
pub struct DlPack<'a> {
    ptr: NonNull<c_void>,
    versioned: bool,
    _borrow: PhantomData<&'a mut [u8]>,
}

// SAFETY: the export owns its memory reference and qnt's deleter may run on any thread.
unsafe impl Send for DlPack<'_> {}

impl<'a> DlPack<'a> {
    fn tensor(&self) -> &DLTensor {
        // SAFETY: ptr is a live managed tensor of the form `versioned` says.
        unsafe {
            if self.versioned {
                &(*self.ptr.as_ptr().cast::<DLManagedTensorVersioned>()).dl_tensor
            } else {
                &(*self.ptr.as_ptr().cast::<DLManagedTensor>()).dl_tensor
            }
        }
    }

    /// Whether this is a `DLManagedTensorVersioned` (DLPack 1.x) rather than the legacy
    /// `DLManagedTensor`.
    pub fn is_versioned(&self) -> bool {
        self.versioned
    }

    /// The DLPack shape.
    pub fn shape(&self) -> &[i64] {
        let t = self.tensor();
        if t.ndim == 0 {
            return &[];
        }
        // SAFETY: a DLTensor's shape holds ndim values and lives as long as the tensor.
        unsafe { std::slice::from_raw_parts(t.shape, t.ndim as usize) }
    }

    /// The data pointer (plus `byte_offset`).
    pub fn data(&self) -> *mut c_void {
        let t = self.tensor();
        t.data
            .cast::<u8>()
            .wrapping_add(t.byte_offset as usize)
            .cast::<c_void>()
    }

    /// Hands the managed tensor over; the caller (or the consumer it passes it to) must call its
    /// deleter once. For a tensor that borrowed memory, that memory must outlive the export.
    pub fn into_raw(self) -> *mut c_void {
        let p = self.ptr.as_ptr();
        std::mem::forget(self);
        p
    }
}

impl Drop for DlPack<'_> {
    fn drop(&mut self) {
        // SAFETY: we own the managed tensor; its deleter is called exactly once, here.
        unsafe {
            if self.versioned {
                let m = self.ptr.as_ptr().cast::<DLManagedTensorVersioned>();
                if let Some(d) = (*m).deleter {
                    d(m);
                }
            } else {
                let m = self.ptr.as_ptr().cast::<DLManagedTensor>();
                if let Some(d) = (*m).deleter {
                    d(m);
                }
            }
        }
    }
}
