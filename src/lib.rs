pub use adamant_runtime as runtime;
