//! A global allocator that aborts the process (a crash libFuzzer reports) on any single
//! allocation above `LIMIT`: a reader that allocates what a header claims, rather than what
//! the input can hold, is found even without AddressSanitizer's `-malloc_limit_mb` (these
//! targets run with `-s none`), and even when the kernel would have overcommitted it.

use std::alloc::{GlobalAlloc, Layout, System};

/// Far above what any input of libFuzzer's default 4096-byte `-max_len` justifies.
pub const LIMIT: usize = 64 << 20;

pub struct Limited;

unsafe impl GlobalAlloc for Limited {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        check(layout.size());
        System.alloc(layout)
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        check(layout.size());
        System.alloc_zeroed(layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        check(new_size);
        System.realloc(ptr, layout, new_size)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }
}

fn check(size: usize) {
    if size > LIMIT {
        // No allocation (and so no panic message) here: write and abort.
        let msg = b"alloc_limit: an allocation above the limit\n";
        unsafe { libc_write(2, msg.as_ptr(), msg.len()) };
        std::process::abort();
    }
}

extern "C" {
    #[link_name = "write"]
    fn libc_write(fd: i32, buf: *const u8, n: usize) -> isize;
}
