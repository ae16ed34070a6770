//! `web.signin`: the owner's one-time sign-in link to the web page.

use crate::access::Scope;
use crate::door::{Caller, Operation, Replay};
use crate::web::SignIn;
use mem_core::MemResult;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A sign-in link for the owner, or for a live token by id or name.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WebSignIn {
    /// The token the session acts as (id or name); absent: the owner.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 128))]
    pub token: Option<String>,
}

impl Operation for WebSignIn {
    const NAME: &'static str = "web.signin";
    const SCOPE: Scope = Scope::Admin;
    /// Not replayable: a kept answer would hold the nonce.
    const REPLAY: Replay = Replay::None;
    type Output = SignIn;

    fn run(self, c: &Caller<'_>) -> MemResult<SignIn> {
        c.admin()?.create_signin(self.token.as_deref())
    }
}
