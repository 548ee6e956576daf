//! [`planted_bug!`](crate::planted_bug): the switch of one planted bug for natm-sim's
//! mutation meta-test, the same in every core that has one.

/// Declares a planted bug's switch: `static FLAG`, `pub fn set(on: bool)` and
/// `pub(crate) fn get() -> bool`, for a core's test-only `mutants` module.
///
/// The flag is a process-global `core` atomic (the cores are `no_std`): whoever switches
/// one on must switch it off again, and nothing that relies on the correct behaviour may
/// run beside it in the same process. In the declaring crate's own unit tests (the
/// expansion's `cfg(test)` is that crate's) each flag is per thread instead, so that a
/// mutant test cannot disturb the tests running beside it.
///
/// ```ignore
/// natm_core::planted_bug! {
///     /// Planted bug: the sender ignores USTAT.
///     IGNORE_USTAT, set_ignore_ustat, ignore_ustat
/// }
/// ```
#[macro_export]
macro_rules! planted_bug {
    ($(#[$doc:meta])* $flag:ident, $set:ident, $get:ident) => {
        #[cfg(not(test))]
        static $flag: ::core::sync::atomic::AtomicBool =
            ::core::sync::atomic::AtomicBool::new(false);

        #[cfg(test)]
        ::std::thread_local! {
            static $flag: ::core::sync::atomic::AtomicBool =
                const { ::core::sync::atomic::AtomicBool::new(false) };
        }

        $(#[$doc])*
        pub fn $set(on: bool) {
            #[cfg(not(test))]
            $flag.store(on, ::core::sync::atomic::Ordering::Relaxed);
            #[cfg(test)]
            $flag.with(|f| f.store(on, ::core::sync::atomic::Ordering::Relaxed));
        }

        pub(crate) fn $get() -> bool {
            #[cfg(not(test))]
            let on = $flag.load(::core::sync::atomic::Ordering::Relaxed);
            #[cfg(test)]
            let on = $flag.with(|f| f.load(::core::sync::atomic::Ordering::Relaxed));
            on
        }
    };
}
