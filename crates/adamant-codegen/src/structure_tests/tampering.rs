//! The tampering table of `tampered_expansions_are_caught`: expansions with part of the epilogue
//! removed or bypassed, each with the check that must catch it and a fragment of its error.
use quote::ToTokens;
use syn::punctuated::Punctuated;
use syn::{Expr, File, ImplItem, Item, Stmt, Token};

use super::expansion::multi_name;
use super::sweep_stores::FUSED_CHUNK;
use super::syntax::tokens;
use super::walk_mut::{
    descriptor_params_mut, device_fn_mut, device_stmts_mut, entries_block_attrs_mut,
    entry_impl_mut, loops_mut, mod_fn_mut, mod_items_mut, sweep_call_mut,
};
use super::{NEW, SWEEP};

/// `(what, the check that must fail, a fragment of its error, the tampered expansion)` for
/// `pristine`, the expansion of `name`.
pub(super) fn tampered(
    pristine: &File,
    name: &str,
) -> Vec<(&'static str, &'static str, &'static str, File)> {
    let multi = multi_name(name);

    let unclamped: Expr = syn::parse_quote!(curiosity_adam_step::update(
        __adamant_p,
        __adamant_g,
        &mut __adamant_m,
        &mut __adamant_v,
        &mut __adamant_v_max,
        lr,
        beta1,
        beta2,
        eps,
        bias_correction1,
        bias_correction2
    ));

    // (what, the check that must fail, a fragment of its error, the tampered expansion)
    let mut tampered: Vec<(&str, &str, &str, File)> = vec![];
    let mut tamper =
        |what: &'static str, check: &'static str, error: &'static str, edit: &dyn Fn(&mut File)| {
            let mut f = pristine.clone();
            edit(&mut f);
            tampered.push((what, check, error, f));
        };

    // entry_signatures
    tamper(
        "entry without the bound",
        "entry_signatures",
        "`curiosity_adam_step`'s last input is `records",
        &|f| {
            device_fn_mut(f, name).sig.inputs.pop();
        },
    );
    tamper(
        "bound moved first",
        "entry_signatures",
        "`curiosity_adam_step`'s last input is `records",
        &|f| {
            let inputs = &mut device_fn_mut(f, name).sig.inputs;
            let bound = inputs.pop().expect("bound").into_value();
            inputs.insert(0, bound);
        },
    );
    tamper(
        "bound declared `mut`",
        "entry_signatures",
        "last input is `mut weight_clamp_max_abs",
        &|f| {
            let inputs = &mut device_fn_mut(f, name).sig.inputs;
            inputs.pop();
            inputs.push(syn::parse_quote!(mut weight_clamp_max_abs: f32));
        },
    );
    tamper(
        "multi entry drops the bound",
        "entry_signatures",
        "`curiosity_adam_step_multi`'s last input is `records",
        &|f| {
            device_fn_mut(f, &multi).sig.inputs.pop();
        },
    );
    tamper(
        "multi entry takes the bound twice",
        "entry_signatures",
        "`curiosity_adam_step_multi` takes `weight_clamp_max_abs` 2 times",
        &|f| {
            let inputs = &mut device_fn_mut(f, &multi).sig.inputs;
            inputs.insert(0, syn::parse_quote!(weight_clamp_max_abs: f32));
        },
    );
    tamper(
        "multi entry takes a plain pointer for the param table",
        "entry_signatures",
        "does not start with the buffer tables",
        &|f| {
            device_fn_mut(f, &multi).sig.inputs[0] = syn::parse_quote!(p: *mut f32);
        },
    );
    tamper(
        "multi entry missing",
        "entry_signatures",
        "the exported functions are [\"curiosity_adam_step\", \"curiosity_adam_step_multi_stepped\"",
        &|f| {
            device_stmts_mut(f)
                .retain(|s| !matches!(s, Stmt::Item(Item::Fn(func)) if func.sig.ident == multi));
        },
    );
    tamper(
        "sweep exported",
        "entry_signatures",
        "the exported functions are [\"__adamant_sweep\"",
        &|f| {
            device_fn_mut(f, SWEEP)
                .attrs
                .push(syn::parse_quote!(#[no_mangle]));
        },
    );
    tamper(
        "a third, unclamped entry",
        "entry_signatures",
        "\"curiosity_adam_step_raw\", \"curiosity_adam_step_stepped\"], expected",
        &|f| {
            f.items.push(syn::parse_quote! {
                #[no_mangle]
                pub unsafe extern "gpu-kernel" fn curiosity_adam_step_raw(p: *mut f32, v: f32) {
                    *p = v;
                }
            });
        },
    );

    tamper(
        "device block not nvptx-only",
        "entry_signatures",
        "the device block is not `#[cfg(",
        &|f| {
            for item in &mut f.items {
                if let Item::Const(c) = item {
                    c.attrs.clear();
                }
            }
        },
    );
    tamper(
        "entries compiled into every dependent's PTX (no adamant_entries cfg)",
        "entry_signatures",
        "the entries' block is not `#[cfg(adamant_entries)]`",
        &|f| {
            entries_block_attrs_mut(f).clear();
        },
    );
    tamper(
        "a static in the device block",
        "entry_signatures",
        "the device block holds `static",
        &|f| {
            device_stmts_mut(f).push(syn::parse_quote!(
                static mut __ADAMANT_SCRATCH: f32 = 0.0;
            ));
        },
    );
    tamper(
        "single entry moved out of the device block (nameable)",
        "entry_signatures",
        "the device block defines [\"__adamant_sweep\", \"curiosity_adam_step_multi\", \"curiosity_adam_step_multi_stepped\", \"curiosity_adam_step_stepped\"]",
        &|f| {
            let stmts = device_stmts_mut(f);
            let at = stmts
                .iter()
                .position(|s| matches!(s, Stmt::Item(Item::Fn(func)) if func.sig.ident == name))
                .expect("the entry");
            let Stmt::Item(entry) = stmts.remove(at) else {
                unreachable!()
            };
            f.items.push(entry);
        },
    );

    // descriptors
    tamper(
        "MULTI_DESCRIPTOR drops the ClampBound",
        "descriptors",
        "MULTI_DESCRIPTOR lists",
        &|f| {
            descriptor_params_mut(f, name, "MULTI_DESCRIPTOR").pop();
        },
    );
    tamper(
        "MULTI_DESCRIPTOR calls the param table a ParamBuffer",
        "descriptors",
        "MULTI_DESCRIPTOR's roles are [\"ParamBuffer\"",
        &|f| {
            let params = descriptor_params_mut(f, name, "MULTI_DESCRIPTOR");
            params[0] = syn::parse_quote!(::adamant_device::abi::KernelParam {
                name: "p",
                ty: ::adamant_device::abi::ParamType::Ptr,
                role: ::adamant_device::abi::ParamRole::ParamBuffer,
            });
        },
    );
    tamper(
        "MULTI_DESCRIPTOR describes the bound as a Scalar",
        "descriptors",
        "MULTI_DESCRIPTOR's params do not end in the one ClampBound",
        &|f| {
            let params = descriptor_params_mut(f, name, "MULTI_DESCRIPTOR");
            *params.last_mut().expect("bound") =
                syn::parse_quote!(::adamant_device::abi::KernelParam {
                    name: "weight_clamp_max_abs",
                    ty: ::adamant_device::abi::ParamType::F32,
                    role: ::adamant_device::abi::ParamRole::Scalar,
                });
        },
    );
    tamper(
        "DESCRIPTOR's bound moved first",
        "descriptors",
        "DESCRIPTOR lists [Some(\"weight_clamp_max_abs\")",
        &|f| {
            let params = descriptor_params_mut(f, name, "DESCRIPTOR");
            let bound = params.pop().expect("bound").into_value();
            params.insert(0, bound);
        },
    );
    tamper(
        "Entry::MULTI_DESCRIPTOR points at DESCRIPTOR",
        "descriptors",
        "`Entry::MULTI_DESCRIPTOR` is not `&MULTI_DESCRIPTOR`",
        &|f| {
            for item in &mut entry_impl_mut(f, name).items {
                if let ImplItem::Const(c) = item {
                    if c.ident == "MULTI_DESCRIPTOR" {
                        c.expr = syn::parse_quote!(&DESCRIPTOR);
                    }
                }
            }
        },
    );
    let edit_scalar_values = |f: &mut File, edit: &dyn Fn(&mut Punctuated<Expr, Token![,]>)| {
        for item in &mut entry_impl_mut(f, name).items {
            let ImplItem::Fn(func) = item else { continue };
            if func.sig.ident != "scalar_values" {
                continue;
            }
            let mac = match func.block.stmts.last_mut() {
                Some(Stmt::Macro(m)) => &mut m.mac,
                Some(Stmt::Expr(Expr::Macro(m), None)) => &mut m.mac,
                _ => panic!("vec!"),
            };
            let mut elems = mac
                .parse_body_with(Punctuated::<Expr, Token![,]>::parse_terminated)
                .expect("vec elements");
            edit(&mut elems);
            mac.tokens = elems.to_token_stream();
        }
    };
    tamper(
        "scalar_values drops a uniform",
        "descriptors",
        "`scalar_values` passes",
        &|f| {
            edit_scalar_values(f, &|elems| {
                elems.pop();
            })
        },
    );
    tamper(
        "scalar_values swaps two uniforms",
        "descriptors",
        "expected the uniforms",
        &|f| {
            edit_scalar_values(f, &|elems| {
                let (a, b) = (elems[0].clone(), elems[1].clone());
                elems[0] = b;
                elems[1] = a;
            })
        },
    );
    tamper(
        "scalar_values passes a bound of its own",
        "descriptors",
        "`scalar_values` passes",
        &|f| {
            edit_scalar_values(f, &|elems| {
                elems.push(syn::parse_quote!(::adamant_device::abi::ArgValue::F32(0.0)));
            })
        },
    );

    // entries_delegate
    tamper(
        "entry stores the parameter directly",
        "entries_delegate",
        "`curiosity_adam_step` writes memory itself",
        &|f| {
            let entry = device_fn_mut(f, name);
            let at = entry.block.stmts.len() - 1;
            entry
                .block
                .stmts
                .insert(at, syn::parse_quote!(*p.add(0) = 0.0;));
        },
    );
    tamper(
        "multi entry stores directly after the sweep",
        "entries_delegate",
        "`curiosity_adam_step_multi` writes memory itself",
        &|f| {
            let chunk_loop = loops_mut(device_fn_mut(f, &multi))
                .pop()
                .expect("chunk loop");
            let at = chunk_loop.body.stmts.len() - 1;
            chunk_loop
                .body
                .stmts
                .insert(at, syn::parse_quote!(*p = 1.0e30;));
        },
    );
    tamper(
        "multi entry stores with `write`",
        "entries_delegate",
        "p . write (1.0e30)",
        &|f| {
            let chunk_loop = loops_mut(device_fn_mut(f, &multi))
                .pop()
                .expect("chunk loop");
            let at = chunk_loop.body.stmts.len() - 1;
            chunk_loop
                .body
                .stmts
                .insert(at, syn::parse_quote!(p.write(1.0e30);));
        },
    );
    tamper(
        "entry passes f32::INFINITY as sweep's bound",
        "entries_delegate",
        "passes `f32 :: INFINITY` as `__adamant_sweep`'s bound",
        &|f| {
            let call = sweep_call_mut(&mut device_fn_mut(f, name).block.stmts).expect("sweep call");
            *call.args.last_mut().expect("bound") = syn::parse_quote!(f32::INFINITY);
        },
    );
    tamper(
        "multi entry passes 0.0 (disabled) as sweep's bound",
        "entries_delegate",
        "passes `0.0` as `__adamant_sweep`'s bound",
        &|f| {
            let call =
                sweep_call_mut(&mut device_fn_mut(f, &multi).block.stmts).expect("sweep call");
            *call.args.last_mut().expect("bound") = syn::parse_quote!(0.0);
        },
    );
    tamper(
        "multi entry passes the bound as a uniform and a constant last",
        "entries_delegate",
        "passes `f32 :: MAX` as `__adamant_sweep`'s bound",
        &|f| {
            let call =
                sweep_call_mut(&mut device_fn_mut(f, &multi).block.stmts).expect("sweep call");
            let n = call.args.len();
            call.args[n - 2] = syn::parse_quote!(weight_clamp_max_abs);
            call.args[n - 1] = syn::parse_quote!(f32::MAX);
        },
    );
    tamper(
        "entry shadows the bound before the call",
        "entries_delegate",
        "`curiosity_adam_step` rebinds `weight_clamp_max_abs`",
        &|f| {
            device_fn_mut(f, name).block.stmts.insert(
                0,
                syn::parse_quote!(let weight_clamp_max_abs = f32::INFINITY;),
            );
        },
    );
    tamper(
        "multi entry no longer calls sweep",
        "entries_delegate",
        "calls `__adamant_sweep` 0 times",
        &|f| {
            let chunk_loop = loops_mut(device_fn_mut(f, &multi))
                .pop()
                .expect("chunk loop");
            chunk_loop.body.stmts.retain(|s| !tokens(s).contains(SWEEP));
        },
    );
    tamper(
        "entry swaps the param and gradient pointers",
        "entries_delegate",
        "passes `g` as `__adamant_sweep`'s buffer `p`",
        &|f| {
            let call = sweep_call_mut(&mut device_fn_mut(f, name).block.stmts).expect("sweep call");
            let (p, g) = (call.args[0].clone(), call.args[1].clone());
            call.args[0] = g;
            call.args[1] = p;
        },
    );
    tamper(
        "multi entry takes the param chunk from the gradient table",
        "entries_delegate",
        "the chunk loop binds `p: * mut f32` from `(* g",
        &|f| {
            let chunk_loop = loops_mut(device_fn_mut(f, &multi))
                .pop()
                .expect("chunk loop");
            for s in &mut chunk_loop.body.stmts {
                if tokens(s).starts_with("let p :") {
                    // The gradient table's pointer for this chunk, as the param's.
                    let from_g: Expr = syn::parse_quote!(
                        (*g.add(__adamant_tensor) as *mut f32).add(__adamant_start)
                    );
                    *s = syn::parse_quote!(let p: *mut f32 = #from_g;);
                }
            }
        },
    );

    tamper(
        "multi entry clamps every tensor with the launch's bound",
        "entries_delegate",
        "passes `weight_clamp_max_abs` as `__adamant_sweep`'s bound",
        &|f| {
            let chunk_loop = loops_mut(device_fn_mut(f, &multi))
                .pop()
                .expect("chunk loop");
            let call = sweep_call_mut(&mut chunk_loop.body.stmts).expect("sweep call");
            *call.args.last_mut().expect("bound") = syn::parse_quote!(weight_clamp_max_abs);
        },
    );
    tamper(
        "multi entry reads the scale of another tensor",
        "entries_delegate",
        "the chunk loop binds `__adamant_bound: f32` to",
        &|f| {
            let chunk_loop = loops_mut(device_fn_mut(f, &multi))
                .pop()
                .expect("chunk loop");
            for s in &mut chunk_loop.body.stmts {
                if tokens(s).starts_with("let __adamant_bound :") {
                    // The chunk's index, not its tensor's, into the per-tensor table.
                    *s = syn::parse_quote!(
                        let __adamant_bound: f32 = ::adamant_device::multi::tensor_bound(
                            weight_clamp_max_abs,
                            *weight_clamp_scales.add(__adamant_c as usize),
                        );
                    );
                }
            }
        },
    );
    tamper(
        "multi entry without the scale table",
        "entry_signatures",
        "does not start with the buffer tables",
        &|f| {
            let inputs = &mut device_fn_mut(f, &multi).sig.inputs;
            *inputs = std::mem::take(inputs)
                .into_iter()
                .filter(|i| !tokens(i).starts_with("weight_clamp_scales"))
                .collect();
        },
    );

    // sweep_stores
    tamper(
        "sweep without the bound",
        "sweep_stores",
        "`__adamant_sweep`'s last input is `__adamant_grad_coef",
        &|f| {
            device_fn_mut(f, SWEEP).sig.inputs.pop();
        },
    );
    tamper(
        "sweep shadows the bound",
        "sweep_stores",
        "`__adamant_sweep` rebinds its input `weight_clamp_max_abs`",
        &|f| {
            device_fn_mut(f, SWEEP).block.stmts.insert(
                0,
                syn::parse_quote!(let weight_clamp_max_abs = f32::INFINITY;),
            );
        },
    );
    tamper(
        "second, unclamped store in the scalar loop",
        "sweep_stores",
        "stores the parameter buffer `p` 3 times",
        &|f| {
            let scalar = loops_mut(device_fn_mut(f, SWEEP))
                .pop()
                .expect("scalar loop");
            scalar
                .body
                .stmts
                .insert(0, syn::parse_quote!(*p.add(__adamant_i) = __adamant_p;));
        },
    );
    tamper(
        "vector loop stores the loaded value",
        "sweep_stores",
        "the vector loop stores `p` 1 times ([\"__adamant_p\"])",
        &|f| {
            let vector = loops_mut(device_fn_mut(f, SWEEP)).remove(0);
            for stmt in &mut vector.body.stmts {
                if let Stmt::Expr(Expr::Assign(assign), _) = stmt {
                    if tokens(assign).starts_with("* (p as") {
                        *assign.right = syn::parse_quote!(__adamant_p);
                    }
                }
            }
        },
    );
    tamper(
        "scalar loop overwrites the clamped value",
        "sweep_stores",
        "`__adamant_sweep` reassigns `__adamant_new`",
        &|f| {
            let scalar = loops_mut(device_fn_mut(f, SWEEP))
                .pop()
                .expect("scalar loop");
            let store = scalar.body.stmts.len() - 1;
            scalar
                .body
                .stmts
                .insert(store, syn::parse_quote!(__adamant_new = #unclamped;));
        },
    );
    let set_scalar_new = |f: &mut File, value: &Expr| {
        let scalar = loops_mut(device_fn_mut(f, SWEEP))
            .pop()
            .expect("scalar loop");
        for s in &mut scalar.body.stmts {
            if let Stmt::Local(l) = s {
                if tokens(&l.pat).contains(NEW) {
                    *l.init.as_mut().expect("init").expr = value.clone();
                }
            }
        }
    };
    tamper(
        "scalar loop stores update() directly",
        "sweep_stores",
        "scalar loop's `__adamant_new` is not exactly 1 clamp call(s): \
         `curiosity_adam_step :: update",
        &|f| set_scalar_new(f, &unclamped),
    );
    tamper(
        "scalar loop scales the clamped value",
        "sweep_stores",
        "weight_clamp_max_abs) * 2.0`",
        &|f| {
            set_scalar_new(
                f,
                &syn::parse_quote!(
                    ::adamant_device::clamp::weight_clamp(__adamant_raw, weight_clamp_max_abs)
                        * 2.0
                ),
            )
        },
    );
    tamper(
        "the clamp in the scalar loop gets another bound",
        "sweep_stores",
        "a clamp in the scalar loop is `:: adamant_device :: clamp :: weight_clamp (__adamant_raw \
         , f32 :: MAX)`",
        &|f| {
            set_scalar_new(
                f,
                &syn::parse_quote!(::adamant_device::clamp::weight_clamp(
                    __adamant_raw,
                    f32::MAX
                )),
            )
        },
    );
    tamper(
        "the scalar loop's raw value is not the update's",
        "sweep_stores",
        "the scalar loop's `__adamant_raw` is not exactly 1 `curiosity_adam_step::update` call(s): \
         `__adamant_p`",
        &|f| {
            let scalar = loops_mut(device_fn_mut(f, SWEEP))
                .pop()
                .expect("scalar loop");
            for s in &mut scalar.body.stmts {
                if let Stmt::Local(l) = s {
                    if tokens(&l.pat).contains("__adamant_raw") {
                        *l.init.as_mut().expect("init").expr = syn::parse_quote!(__adamant_p);
                    }
                }
            }
        },
    );
    tamper(
        "compound store to the parameter after the clamped one",
        "sweep_stores",
        "* p . add (__adamant_i) += 1.0",
        &|f| {
            let scalar = loops_mut(device_fn_mut(f, SWEEP))
                .pop()
                .expect("scalar loop");
            let after_store = scalar.body.stmts.len() - 1;
            scalar
                .body
                .stmts
                .insert(after_store, syn::parse_quote!(*p.add(__adamant_i) += 1.0;));
        },
    );
    tamper(
        "store through an alias of the parameter pointer",
        "sweep_stores",
        "stores through `Some(\"__adamant_alias\")`",
        &|f| {
            let scalar = loops_mut(device_fn_mut(f, SWEEP))
                .pop()
                .expect("scalar loop");
            let after_store = scalar.body.stmts.len() - 1;
            scalar.body.stmts.insert(
                after_store,
                syn::parse_quote!(let __adamant_alias: *mut f32 = p;),
            );
            scalar.body.stmts.insert(
                after_store + 1,
                syn::parse_quote!(*__adamant_alias.add(__adamant_i) = __adamant_p;),
            );
        },
    );
    tamper(
        "sweep stores through ptr::write",
        "sweep_stores",
        ":: core :: ptr :: write",
        &|f| {
            let scalar = loops_mut(device_fn_mut(f, SWEEP))
                .pop()
                .expect("scalar loop");
            let after_store = scalar.body.stmts.len() - 1;
            scalar.body.stmts.insert(
                after_store,
                syn::parse_quote!(::core::ptr::write(p.add(__adamant_i), __adamant_p);),
            );
        },
    );

    tamper(
        "sweep also defined, nameable, in the kernel module",
        "sweep_stores",
        "the kernel module defines the fns [\"update\", \"element\", \"sweep\", \"derived_at\", \"__adamant_fused_chunk\"]",
        &|f| {
            let mut sweep = device_fn_mut(f, SWEEP).clone();
            sweep.sig.ident = syn::parse_quote!(sweep);
            sweep.vis = syn::parse_quote!(pub);
            let items = mod_items_mut(f, name);
            let at = items
                .iter()
                .position(|i| matches!(i, Item::Fn(func) if func.sig.ident == "element"))
                .expect("element");
            items.insert(at + 1, Item::Fn(sweep));
        },
    );

    // The fused chunk: its own sweep is held to the same checks, and it passes its own bound.
    tamper(
        "fused chunk's sweep stores the raw value",
        "sweep_stores",
        "the scalar loop stores `p` 1 times ([\"__adamant_raw\"])",
        &|f| {
            let chunk = mod_fn_mut(f, name, FUSED_CHUNK);
            let Some(Stmt::Item(Item::Fn(inner))) = chunk.block.stmts.first_mut() else {
                panic!("the fused chunk's sweep");
            };
            let scalar = loops_mut(inner).pop().expect("scalar loop");
            for stmt in &mut scalar.body.stmts {
                if let Stmt::Expr(Expr::Assign(a), _) = stmt {
                    if tokens(&a.right) == NEW {
                        *a.right = syn::parse_quote!(__adamant_raw);
                    }
                }
            }
        },
    );
    tamper(
        "fused chunk passes the sweep a bound of its choosing",
        "sweep_stores",
        "does not pass its own `weight_clamp_max_abs` as `__adamant_sweep`'s bound",
        &|f| {
            let chunk = mod_fn_mut(f, name, FUSED_CHUNK);
            let call = sweep_call_mut(&mut chunk.block.stmts).expect("the fused chunk's call");
            let last = call.args.last_mut().expect("bound");
            *last = syn::parse_quote!(f32::MAX);
        },
    );

    // element_clamps
    tamper(
        "element returns update() unclamped",
        "element_clamps",
        "`element` calls `self :: update`, not",
        &|f| {
            let element = mod_fn_mut(f, name, "element");
            let Some(Stmt::Expr(Expr::Call(clamp), None)) = element.block.stmts.first() else {
                panic!("element body");
            };
            let unclamped = clamp.args[0].clone();
            element.block.stmts = vec![Stmt::Expr(unclamped, None)];
        },
    );
    tamper(
        "element clamps with another bound",
        "element_clamps",
        "with `f32 :: INFINITY`",
        &|f| {
            mod_fn_mut(f, name, "element").block = syn::parse_quote!({
                ::adamant_device::clamp::weight_clamp(
                    self::update(
                        p,
                        g,
                        m,
                        v,
                        v_max,
                        lr,
                        beta1,
                        beta2,
                        eps,
                        bias_correction1,
                        bias_correction2,
                    ),
                    f32::INFINITY,
                )
            });
        },
    );
    tamper(
        "element feeds update the parameter twice",
        "element_clamps",
        "`element` forwards [Some(\"p\"), Some(\"p\")",
        &|f| {
            mod_fn_mut(f, name, "element").block = syn::parse_quote!({
                ::adamant_device::clamp::weight_clamp(
                    self::update(
                        p,
                        p,
                        m,
                        v,
                        v_max,
                        lr,
                        beta1,
                        beta2,
                        eps,
                        bias_correction1,
                        bias_correction2,
                    ),
                    weight_clamp_max_abs,
                )
            });
        },
    );
    tampered
}
