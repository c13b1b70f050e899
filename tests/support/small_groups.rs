//! The seed's eight groups at small sizes, shared by the GPU tests of a whole step. Three lengths
//! are not multiples of 4 (4099, 777, 513), so those groups' scalar loops run too.
use adamant_rl::GroupSizes;

pub fn sizes() -> GroupSizes {
    GroupSizes {
        dqn_trunk: 4099,
        dqn_heads: 1024,
        iqn_online: 2048,
        iql: 777,
        attention: 1024,
        tlob: 513,
        curiosity: 640,
        decision_transformer: 256,
    }
}
