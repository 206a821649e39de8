"""The read-only web view of Shipyard: site, actions and plans as server-rendered HTML."""
