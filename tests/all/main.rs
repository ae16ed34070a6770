//! End-to-end tests: they drive the built `mem-host` binary as a user or a
//! script would. One test binary with a module per area (links once).

// A failing unwrap is a failing test here.
#![allow(clippy::unwrap_used)]

mod support;

mod adapters;
mod annotations;
mod bundles;
mod conflicts;
mod contract;
mod door;
mod durability;
mod files;
mod filetypes;
mod fixtures_gen;
mod governance;
mod handoff;
mod intake;
mod mcp;
mod memories;
mod navigation;
mod plugins;
mod processors;
mod read_gate;
mod recall;
mod recall_log;
mod related;
mod rest;
mod schemas;
mod shared;
mod store_errors;
mod timeline;
mod upload_form;
mod web;
mod web_admin;
mod webdriver;
