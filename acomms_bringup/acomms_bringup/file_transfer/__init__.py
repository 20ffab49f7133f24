"""Files over acoustics (issue 15): `store` (ROS-free: names, hashes, confined writes),
`file_transfer_node` (send_file service, receiver), `send_file_cli` (acomms_send_file)."""
