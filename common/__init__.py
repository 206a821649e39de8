"""What Shipyard, Promenade and Drydock share: status bodies, errors, the app factory, auth."""
