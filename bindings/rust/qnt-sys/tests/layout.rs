//! The layout of every struct of the header with fields (qnt_error_report; the handles are
//! opaque), against the C compiler's sizeof, alignof and offsetof.

mod common;

use qnt_sys::qnt_error_report;
use std::mem::{align_of, size_of, MaybeUninit};
use std::ptr::addr_of;

#[test]
fn error_report_layout_matches_the_c_compiler() {
    let c = common::c_values(
        "qnt_sys_layout",
        "  P(\"size\", sizeof(qnt_error_report));\n\
           P(\"align\", _Alignof(qnt_error_report));\n\
           P(\"mse\", offsetof(qnt_error_report, mse));\n\
           P(\"sqnr_db\", offsetof(qnt_error_report, sqnr_db));\n\
           P(\"max_abs_error\", offsetof(qnt_error_report, max_abs_error));\n\
           P(\"saturated_fraction\", offsetof(qnt_error_report, saturated_fraction));\n\
           P(\"count\", offsetof(qnt_error_report, count));\n",
    );
    let r = MaybeUninit::<qnt_error_report>::uninit();
    let base = r.as_ptr() as usize;
    // SAFETY: addr_of! takes field addresses without reading the uninitialized value.
    let offsets = unsafe {
        [
            ("mse", addr_of!((*r.as_ptr()).mse) as usize - base),
            ("sqnr_db", addr_of!((*r.as_ptr()).sqnr_db) as usize - base),
            (
                "max_abs_error",
                addr_of!((*r.as_ptr()).max_abs_error) as usize - base,
            ),
            (
                "saturated_fraction",
                addr_of!((*r.as_ptr()).saturated_fraction) as usize - base,
            ),
            ("count", addr_of!((*r.as_ptr()).count) as usize - base),
        ]
    };
    assert_eq!(c["size"], size_of::<qnt_error_report>() as i128);
    assert_eq!(c["align"], align_of::<qnt_error_report>() as i128);
    for (field, offset) in offsets {
        assert_eq!(c[field], offset as i128, "offset of {field}");
    }
}
