fn main(){ println!("{:?}", adamant_runtime::_cust_links()); }
