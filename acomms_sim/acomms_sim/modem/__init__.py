"""The simulated modem, ROS-free: `SimModem` (sim_modem) and its plain data (fields)."""
