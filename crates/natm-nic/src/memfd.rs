//! The memfd backend: `memfd_create` + `ftruncate` + `mmap(MAP_SHARED)`.
//!
//! One side creates the region and hands its fd to the other (SCM_RIGHTS in the host
//! daemon), which maps it with [`MemfdMem::map`]. The creator seals the size
//! (`F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL`) and the mapper refuses an fd without those
//! seals: otherwise the peer could truncate the file under our mapping and every access
//! past the new end would raise SIGBUS.

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::ptr::NonNull;
use std::sync::atomic::AtomicU64;

use rustix::fs::{
    MemfdFlags, SealFlags, fcntl_add_seals, fcntl_get_seals, fstat, ftruncate, memfd_create,
};
use rustix::mm::{MapFlags, ProtFlags, mmap, munmap};

use crate::shm::{MemError, SharedMem, check_len};

/// A memfd region mapped shared, read-write.
pub struct MemfdMem {
    ptr: NonNull<AtomicU64>,
    len: usize,
    fd: OwnedFd,
}

// SAFETY: the mapping is only ever accessed through &[AtomicU64] (words()), which is safe
// to share and send between threads; the pointer is owned by this value and unmapped once,
// in Drop.
unsafe impl Send for MemfdMem {}
// SAFETY: as above: shared access goes through atomics only.
unsafe impl Sync for MemfdMem {}

fn os(call: &'static str) -> impl FnOnce(rustix::io::Errno) -> MemError {
    move |e| MemError::Os {
        call,
        source: e.into(),
    }
}

impl MemfdMem {
    /// Creates a sealed memfd of `len_bytes` (a non-zero multiple of 64) and maps it.
    pub fn create(name: &str, len_bytes: usize) -> Result<Self, MemError> {
        check_len(len_bytes as u64)?;
        let fd = memfd_create(name, MemfdFlags::CLOEXEC | MemfdFlags::ALLOW_SEALING)
            .map_err(os("memfd_create"))?;
        ftruncate(&fd, len_bytes as u64).map_err(os("ftruncate"))?;
        fcntl_add_seals(&fd, SealFlags::SHRINK | SealFlags::GROW | SealFlags::SEAL)
            .map_err(os("fcntl(F_ADD_SEALS)"))?;
        Self::map_len(fd, len_bytes)
    }

    /// Maps a memfd received from the other side. Its size must be a valid region length
    /// and it must be sealed against shrinking and growing.
    pub fn map(fd: OwnedFd) -> Result<Self, MemError> {
        let seals = fcntl_get_seals(&fd).map_err(|_| MemError::NotSealed)?;
        if !seals.contains(SealFlags::SHRINK | SealFlags::GROW) {
            return Err(MemError::NotSealed);
        }
        let size = fstat(&fd).map_err(os("fstat"))?.st_size;
        let size = u64::try_from(size).map_err(|_| MemError::BadLength { len: 0 })?;
        check_len(size)?;
        Self::map_len(fd, size as usize)
    }

    fn map_len(fd: OwnedFd, len: usize) -> Result<Self, MemError> {
        // SAFETY: a fresh shared mapping chosen by the kernel (null hint, no MAP_FIXED), so
        // it aliases no Rust object; len is non-zero and the file is at least len bytes
        // long and sealed against shrinking, so every page of the mapping is backed.
        let p = unsafe {
            mmap(
                core::ptr::null_mut(),
                len,
                ProtFlags::READ | ProtFlags::WRITE,
                MapFlags::SHARED,
                &fd,
                0,
            )
        }
        .map_err(os("mmap"))?;
        let ptr = NonNull::new(p.cast::<AtomicU64>()).ok_or(MemError::BadLength { len: 0 })?;
        Ok(MemfdMem { ptr, len, fd })
    }

    /// The memfd, to hand to the other side (dup it with `try_clone_to_owned`).
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

impl SharedMem for MemfdMem {
    #[inline(always)]
    fn words(&self) -> &[AtomicU64] {
        // SAFETY: ptr is the start of a live mapping of len bytes (unmapped only in Drop,
        // which needs &mut self, so not while this borrow lives); it is page aligned, so
        // aligned for AtomicU64; len is a multiple of 64, so len / 8 words fit exactly; the
        // pages are initialized (zero-filled or written by a process). Other processes may
        // write the same memory concurrently: AtomicU64 has interior mutability and every
        // access we make goes through it, so those writes are atomic races, not data races.
        unsafe { core::slice::from_raw_parts(self.ptr.as_ptr(), self.len / 8) }
    }
}

impl Drop for MemfdMem {
    fn drop(&mut self) {
        // SAFETY: ptr/len are exactly the mapping made in map_len, unmapped only here;
        // no borrow of words() can outlive self.
        let _ = unsafe { munmap(self.ptr.as_ptr().cast(), self.len) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering;

    #[test]
    fn two_mappings_of_one_fd_share_memory() {
        let a = MemfdMem::create("natm-test", 4096).unwrap();
        let b = MemfdMem::map(a.fd().try_clone_to_owned().unwrap()).unwrap();
        assert_eq!(b.len_bytes(), 4096);
        a.words()[17].store(0xdead_beef, Ordering::Release);
        assert_eq!(b.words()[17].load(Ordering::Acquire), 0xdead_beef);
        assert_eq!(a.words().as_ptr() as usize % 4096, 0, "page aligned");
    }

    #[test]
    fn unsealed_or_odd_fds_are_refused() {
        let fd = memfd_create(
            "natm-unsealed",
            MemfdFlags::CLOEXEC | MemfdFlags::ALLOW_SEALING,
        )
        .unwrap();
        ftruncate(&fd, 4096).unwrap();
        assert!(matches!(
            MemfdMem::map(fd.try_clone().unwrap()),
            Err(MemError::NotSealed)
        ));
        let fd = memfd_create("natm-odd", MemfdFlags::CLOEXEC | MemfdFlags::ALLOW_SEALING).unwrap();
        ftruncate(&fd, 100).unwrap();
        fcntl_add_seals(&fd, SealFlags::SHRINK | SealFlags::GROW).unwrap();
        assert!(matches!(
            MemfdMem::map(fd),
            Err(MemError::BadLength { len: 100 })
        ));
        // A sealed region cannot be shrunk by the peer.
        let a = MemfdMem::create("natm-sealed", 4096).unwrap();
        assert!(ftruncate(a.fd(), 0).is_err());
        assert!(matches!(
            MemfdMem::create("x", 0),
            Err(MemError::BadLength { len: 0 })
        ));
    }
}
