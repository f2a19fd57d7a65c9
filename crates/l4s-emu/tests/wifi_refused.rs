//! The emulator does not drive the Wi-Fi MAC yet: a `[link] model = "wifi"` table is refused
//! with an error naming `link.model`, never run as some other link.

use l4s_emu::path::{Path, PathConfig};
use serde_json::json;

#[test]
fn a_wifi_link_is_refused_by_name() {
    let link = json!({"model": "wifi", "wifi": {"standard": "ac", "mcs": 5, "width": 20}});
    let cfg = PathConfig::from_tables(link, json!({"kind": "fifo"})).expect("valid tables");
    let e = Path::new(cfg).err().expect("refused").to_string();
    assert!(
        e.contains("link.model") && e.contains("simulator only"),
        "{e}"
    );
}
