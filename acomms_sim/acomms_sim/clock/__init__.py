"""Deterministic simulated time: stepping plan (ROS-free `stepping`), executor draining
(`executor_stepper`) and the Tick/Tock participant helper (`participant`)."""
