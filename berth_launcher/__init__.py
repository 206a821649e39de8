"""The `berth` launcher: a simulated site with Shipyard, Promenade and Drydock on it
(`berth up`, `berth down`, `berth db upgrade`)."""
