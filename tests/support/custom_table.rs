//! A slot table declared outside the seed with `slot_table!`, as a user of the generic runtime
//! declares one for buffers of their own: an activation checked for non-finite values, one with
//! a max-abs bound, and a parameter group's weights (bound by the group's name). Shared by
//! tests/cpu/nan_check_cpu.rs (layout, metadata, decoding) and tests/gpu/nan_check.rs (checked on the
//! device).
use adamant_runtime::nan_check::{Check, Source};
use adamant_runtime::GroupBuffer;

/// The group whose weights slot 2 watches.
pub const GROUP: &str = "net";

/// Slot 1's max-abs factor: its threshold is `Q_FACTOR × max(Q_ABS_REF, 1)`.
pub const Q_FACTOR: f32 = 1e2;

adamant_runtime::slot_table! {
    "custom";
    0 hidden:      Check::NonFinite,
                   Source::Activation { what: "a hidden layer's output" };
    1 q_max:       Check::MaxAbs { factor: Q_FACTOR },
                   Source::Activation { what: "Q values" };
    2 net_weights: Check::NonFinite,
                   Source::Group { group: GROUP, buffer: GroupBuffer::Params };
}
