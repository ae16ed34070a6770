//! mem-plugin-sdk
