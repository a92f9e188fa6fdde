//! What every engine gives an operation: where its connections come from,
//! the connections themselves and a timer. The operations (src/node/ops/)
//! are written once over this trait; src/node/entries.rs runs each on
//! both engines.

use std::future::Future;
use std::sync::Arc;

use redis::aio::ConnectionLike;

use crate::error::Result;
use crate::node::targets::Target;
use crate::waiting::timer::Timer;

/// An engine, as the operations see it.
pub(crate) trait Engine: 'static {
    /// A connection the lock logic sends commands on.
    type Conn: ConnectionLike;
    /// Where an operation's connections come from: the endpoint's shared
    /// connection, or a lane of its own. Held for the whole operation.
    type Route;

    /// The shared connection of endpoint `endpoint` (JavaScript's id).
    fn shared(endpoint: u32) -> Result<Self::Route>;

    /// A connection of its own for a replica-acknowledged operation (`WAIT`
    /// blocks the connection it is sent on); an engine without lanes gives
    /// the shared one.
    fn lane(endpoint: u32, target: &Arc<Target>) -> Self::Route;

    /// A usable connection from `route`.
    fn connect(route: &Self::Route) -> impl Future<Output = Result<Self::Conn>>;

    /// Which of its endpoint's connections `conn` is on: another after a
    /// reconnect (perhaps to a restarted server, which has no scripts).
    fn conn_id(conn: &Self::Conn) -> u64;

    /// The timer waits run on.
    fn timer() -> &'static dyn Timer;

    /// The shared connection of each of `endpoints`, in order.
    fn shared_all(endpoints: &[u32]) -> Result<Vec<Self::Route>> {
        endpoints.iter().map(|e| Self::shared(*e)).collect()
    }
}
