//! What is simulated: traffic, the backend, faults and the clients' retry
//! behaviour. One [`run::simulate`] call is one (policy, replication) run.

pub mod backend;
pub mod dispatcher;
pub mod dist;
pub mod faults;
pub mod record;
pub mod requests;
pub mod run;
pub mod traffic;
