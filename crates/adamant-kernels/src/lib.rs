//! adamant's own kernels: the entries of the PTX module that `adamant-runtime` embeds and loads.
//!
//! - [`optimizers`]: the five Adam kernels of the seed's training step, and [`soft_update`], the
//!   soft update of a target network (it writes parameters, so it is an optimizer kernel too);
//! - [`half_weights`]: AdamW on bf16 and f16 weights and gradients (f32 or bf16 moments), and
//!   [`soft_update::soft_update_bf16`], a bf16 target network's soft update;
//! - [`fused`]: the f32 kernels as the rules of one fused entry, `adamant_fused_step`, and the
//!   16-bit ones beside f32 AdamW in another, `adamant_fused_mixed`;
//! - [`step`]: the advance of the step records, [`guard`]: the step guard's pass over the
//!   gradients, [`nan_check`]: the fused NaN / max-abs checker.
//!
//! Written with the device SDK (`adamant-device`) as any downstream kernel crate would be; the
//! kernel set they register is [`adamant_device::abi::OWN_SET`]. Compiled for
//! `nvptx64-nvidia-cuda` by `adamant-runtime`'s build script (with `adamant_build::KernelCrate`)
//! and for the host, where its descriptors drive the launches and the audit.
#![cfg_attr(target_arch = "nvptx64", no_std)]
#![cfg_attr(target_arch = "nvptx64", feature(abi_gpu_kernel))]

pub mod fused;
pub mod guard;
pub mod half_weights;
pub mod nan_check;
pub mod optimizers;
pub mod soft_update;
pub mod step;

#[cfg(test)]
mod tests {
    /// The set name the ABI calls adamant's own is this crate's: a rename of the crate would
    /// otherwise leave the runtime looking for its kernels under a name no kernel registers.
    #[test]
    fn own_set_is_this_crates_name() {
        assert_eq!(adamant_device::abi::OWN_SET, env!("CARGO_CRATE_NAME"));
        assert!(adamant_device::abi::kernel_set(env!("CARGO_CRATE_NAME")).is_ok());
    }
}
